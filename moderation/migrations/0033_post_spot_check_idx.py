"""The spot checks' indexes on the post table: the drawn posts still waiting for a check (the
dashboard's tab), and every drawn post by arrival, all sources' (the metrics page's figures) and
one source's (the API's). Partial: a post that was not drawn pays no entry.

Built CONCURRENTLY on PostgreSQL so that applying them to a live database does not block ingest
or scoring. An index left INVALID by an interrupted build is dropped first, so a re-run builds
it again instead of keeping it. Elsewhere (SQLite) the schema editor creates them as usual."""

from django.db import migrations, models
from django.db.models import Q

INDEXES = {
    "post_spot_check_waiting_idx": (
        models.Index(
            fields=["received_at", "id"],
            name="post_spot_check_waiting_idx",
            condition=Q(spot_check_action="approve", status="auto_approved")
            | Q(spot_check_action="remove", status="auto_removed"),
        ),
        "(received_at, id) WHERE (spot_check_action = 'approve' AND status = 'auto_approved') "
        "OR (spot_check_action = 'remove' AND status = 'auto_removed')",
    ),
    "post_spot_check_idx": (
        models.Index(fields=["received_at"], name="post_spot_check_idx", condition=~Q(spot_check_action="")),
        "(received_at) WHERE NOT (spot_check_action = '')",
    ),
    "post_spot_check_source_idx": (
        models.Index(
            fields=["source", "received_at"], name="post_spot_check_source_idx", condition=~Q(spot_check_action="")
        ),
        "(source_id, received_at) WHERE NOT (spot_check_action = '')",
    ),
}


def create(apps, schema_editor):
    for name, (index, definition) in INDEXES.items():
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
            schema_editor.execute(f"CREATE INDEX CONCURRENTLY {name} ON moderation_post {definition}")
        else:
            schema_editor.add_index(apps.get_model("moderation", "Post"), index)


def drop(apps, schema_editor):
    for name, (index, _) in INDEXES.items():
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
        else:
            schema_editor.remove_index(apps.get_model("moderation", "Post"), index)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("moderation", "0032_spot_checks")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="post", index=index) for index, _ in INDEXES.values()],
            database_operations=[migrations.RunPython(create, reverse_code=drop)],
        ),
    ]
