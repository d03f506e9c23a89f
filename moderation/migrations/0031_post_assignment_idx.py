"""Indexes of the queue's "mine" and specialist-queue views: a moderator's or a queue's queued
posts in priority order. Partial: an unassigned post costs them nothing.

Built CONCURRENTLY on PostgreSQL so that applying them to a live database does not block ingest
or scoring (a plain CREATE INDEX scans the whole post table under a lock that stops writes);
elsewhere (SQLite, the embedded default) the schema editor creates them as usual."""

from django.db import migrations, models

INDEXES = {
    "post_assignee_idx": (
        models.Index(
            fields=["assigned_to", "-priority", "id"],
            name="post_assignee_idx",
            condition=models.Q(status="queued", assigned_to__isnull=False),
        ),
        "(assigned_to_id, priority DESC, id) WHERE status = 'queued' AND assigned_to_id IS NOT NULL",
    ),
    "post_assigned_queue_idx": (
        models.Index(
            fields=["assigned_queue", "-priority", "id"],
            name="post_assigned_queue_idx",
            condition=models.Q(status="queued", assigned_queue__isnull=False),
        ),
        "(assigned_queue_id, priority DESC, id) WHERE status = 'queued' AND assigned_queue_id IS NOT NULL",
    ),
}


def create(apps, schema_editor):
    for name, (index, definition) in INDEXES.items():
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON moderation_post {definition}")
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

    dependencies = [("moderation", "0030_notes_and_assignment")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="post", index=index) for index, _ in INDEXES.values()],
            database_operations=[migrations.RunPython(create, reverse_code=drop)],
        ),
    ]
