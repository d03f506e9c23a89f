"""`Source.approval_level_set_at`: when an admin last set the approval level by hand; the
evidence for raising it counts only posts received since (scoring.services.approval_levels). A
nullable column: adding it rewrites nothing."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("moderation", "0035_post_ended_source_idx")]

    operations = [
        migrations.AddField(
            model_name="source",
            name="approval_level_set_at",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
    ]
