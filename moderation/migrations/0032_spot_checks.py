"""Source.spot_check_rate: a source's own share of automatic decisions to spot-check (empty
follows settings.SPOT_CHECK_RATE). A nullable column: adding it rewrites nothing."""

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("moderation", "0031_post_assignment_idx")]

    operations = [
        migrations.AddField(
            model_name="source",
            name="spot_check_rate",
            field=models.FloatField(
                blank=True,
                help_text="Share of automatic decisions a moderator is asked to confirm; empty follows SPOT_CHECK_RATE.",
                null=True,
                validators=[
                    django.core.validators.MinValueValidator(0.0),
                    django.core.validators.MaxValueValidator(1.0),
                ],
            ),
        ),
    ]
