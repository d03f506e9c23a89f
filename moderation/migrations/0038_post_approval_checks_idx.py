"""One source's ended spot checks of automatic approvals, by arrival: confirmed or removed by a
moderator, or removed by a later re-score (the spot checks that can lower an earned approval
level, scoring.services.approval_levels). Partial and narrow: the draws still waiting, the
removal draws and every undrawn post pay no entry, so the beat task reads about as many rows as
moderators checked, not every draw of the window.

Built CONCURRENTLY on PostgreSQL so that applying it to a live database does not block ingest or
scoring; an index left INVALID by an interrupted build is dropped first, so a re-run builds it
again. Elsewhere (SQLite) the schema editor creates it as usual."""

from django.db import migrations, models
from django.db.models import Q

NAME = "post_approval_checks_idx"
INDEX = models.Index(
    fields=["source", "received_at"],
    name=NAME,
    condition=Q(spot_check_action="approve", status__in=["approved", "removed", "auto_removed"]),
)
DEFINITION = (
    "(source_id, received_at) WHERE spot_check_action = 'approve' AND status IN ('approved', 'removed', 'auto_removed')"
)


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

    dependencies = [("moderation", "0037_source_approval_level_help")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="post", index=INDEX)],
            database_operations=[migrations.RunPython(create, reverse_code=drop)],
        ),
    ]
