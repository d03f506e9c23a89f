"""Spot checks: `Source.spot_check_rate` (a source's own share of automatic decisions to check;
empty follows settings.SPOT_CHECK_RATE) and `Post.spot_check_action` (what the models did
alone when the post was drawn). A nullable column and a column with a database default: adding
them rewrites nothing. Their indexes come in 0033, built concurrently."""

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
        migrations.AddField(
            model_name="post",
            name="spot_check_action",
            field=models.CharField(blank=True, db_default="", default="", max_length=10),
        ),
    ]
