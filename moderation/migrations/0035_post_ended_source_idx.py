"""One source's ended posts by arrival: approved or removed by a moderator, or removed
automatically (the earned approval's evidence, scoring.services.approval_levels). Partial:
posts approved automatically and posts still waiting, the bulk, pay no entry.

Built CONCURRENTLY on PostgreSQL so that applying it to a live database does not block ingest or
scoring; an index left INVALID by an interrupted build is dropped first, so a re-run builds it
again. Elsewhere (SQLite) the schema editor creates it as usual."""

from django.db import migrations, models
from django.db.models import Q

NAME = "post_ended_source_idx"
INDEX = models.Index(
    fields=["source", "received_at"], name=NAME, condition=Q(status__in=["approved", "removed", "auto_removed"])
)
DEFINITION = "(source_id, received_at) WHERE status IN ('approved', 'removed', 'auto_removed')"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {NAME}")
        schema_editor.execute(f"CREATE INDEX CONCURRENTLY {NAME} ON moderation_post {DEFINITION}")
    else:
        schema_editor.add_index(apps.get_model("moderation", "Post"), INDEX)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {NAME}")
    else:
        schema_editor.remove_index(apps.get_model("moderation", "Post"), INDEX)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("moderation", "0034_source_approval_level")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="post", index=INDEX)],
            database_operations=[migrations.RunPython(create, reverse_code=drop)],
        ),
    ]
