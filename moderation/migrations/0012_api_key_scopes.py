"""API keys carry scopes. Keys that exist before this migration get every scope, so
integrations keep working; new keys get exactly the scopes chosen when they are created."""

from django.db import migrations, models

ALL_SCOPES = ["posts:write", "reports:write", "authors:write", "blocks:write", "read"]


def grant_existing_keys_every_scope(apps, schema_editor):
    apps.get_model("moderation", "ApiKey").objects.update(scopes=ALL_SCOPES)


class Migration(migrations.Migration):
    dependencies = [
        ("moderation", "0011_drop_blocklist_status_source"),
    ]

    operations = [
        migrations.AddField(
            model_name="apikey",
            name="scopes",
            field=models.JSONField(blank=True, default=list, help_text="What this key may do (ApiScope values)."),
        ),
        migrations.RunPython(grant_existing_keys_every_scope, migrations.RunPython.noop),
    ]
