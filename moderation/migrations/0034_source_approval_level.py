"""Earned approval: `Source.approval_level` (0..1, how far the models may approve on their own,
scoring.services.earned_approval). A column with a database default: adding it rewrites nothing.
A source that exists already keeps the approvals it had (level 1); a source created afterwards
starts at 0 and earns its band from its reviewed posts (UPGRADING.md)."""

import django.core.validators
from django.db import migrations, models


def existing_sources_keep_their_band(apps, schema_editor):
    apps.get_model("moderation", "Source").objects.update(approval_level=1.0)


class Migration(migrations.Migration):
    dependencies = [("moderation", "0033_post_spot_check_idx")]

    operations = [
        migrations.AddField(
            model_name="source",
            name="approval_level",
            field=models.FloatField(
                db_default=0.0,
                default=0.0,
                help_text="How far the models may approve on their own: 0 only the surest posts, 1 the policy's full "
                "band. Raised automatically as reviewed posts show the wider band safe.",
                validators=[
                    django.core.validators.MinValueValidator(0.0),
                    django.core.validators.MaxValueValidator(1.0),
                ],
            ),
        ),
        migrations.RunPython(existing_sources_keep_their_band, migrations.RunPython.noop),
    ]
