"""A source's own blocks (SourceBlock). Blocks that sources set through the API used to be
global (Domain/IpAddress.status with status_source set): they move to the source's own list,
and the global status goes back to unknown, each move audited. Moderators' blocks stay global."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


def move_api_blocks_to_sources(apps, schema_editor):
    SourceBlock = apps.get_model("moderation", "SourceBlock")
    AuditLog = apps.get_model("moderation", "AuditLog")
    now = django.utils.timezone.now()
    for model_name, kind, value_field in (("Domain", "domain", "name"), ("IpAddress", "ip", "address")):
        model = apps.get_model("moderation", model_name)
        rows = model.objects.filter(status="block", status_source__isnull=False)
        for row in rows.iterator():
            value = str(getattr(row, value_field))
            SourceBlock.objects.get_or_create(
                source_id=row.status_source_id,
                kind=kind,
                value=value,
                defaults={"reason": row.status_reason, "created_at": row.status_changed_at or now},
            )
            AuditLog.objects.create(
                action=f"{kind}.block_scoped_to_source",
                target_type=model_name.lower(),
                target_id=str(row.pk),
                before={"name": value, "status": "block", "reason": row.status_reason},
                after={"name": value, "status": "unknown", "source_id": row.status_source_id},
            )
        rows.update(status="unknown", status_reason="", status_changed_at=now, status_source=None)


class Migration(migrations.Migration):
    dependencies = [
        ("moderation", "0009_post_author_link_idx"),
    ]

    operations = [
        migrations.CreateModel(
            name="SourceBlock",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("kind", models.CharField(choices=[("domain", "Domain"), ("ip", "IP address")], max_length=6)),
                ("value", models.CharField(max_length=253)),
                ("reason", models.CharField(blank=True, max_length=255)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "source",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="blocks", to="moderation.source"
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("source", "kind", "value"), name="sourceblock_source_kind_value_uniq"
                    )
                ],
            },
        ),
        migrations.RunPython(move_api_blocks_to_sources, migrations.RunPython.noop),
    ]
