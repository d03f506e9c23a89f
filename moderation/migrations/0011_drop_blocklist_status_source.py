"""Global blocks are moderators' only now (0010 moved the API-set ones to SourceBlock)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("moderation", "0010_source_blocks"),
    ]

    operations = [
        migrations.RemoveField(model_name="domain", name="status_source"),
        migrations.RemoveField(model_name="ipaddress", name="status_source"),
    ]
