"""Trigram index for the dashboard's text search (queue filter `q`).

Django's icontains on PostgreSQL is `UPPER(text::text) LIKE UPPER('%term%')`; a GIN trigram
index on the same expression turns it from a scan of every queued post into an index lookup.
Raw SQL because the expression index with an operator class is PostgreSQL-only; on any other
database (the embedded SQLite default) the migration does nothing."""

from django.db import migrations


def _on_postgresql(sql: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("moderation", "0003_merge_roles_and_status_changed_at")]

    operations = [
        migrations.RunPython(
            _on_postgresql("CREATE EXTENSION IF NOT EXISTS pg_trgm"),
            reverse_code=migrations.RunPython.noop,
        ),
        migrations.RunPython(
            _on_postgresql(
                "CREATE INDEX IF NOT EXISTS post_text_trgm_idx ON moderation_post "
                "USING gin ((UPPER(text::text)) gin_trgm_ops)"
            ),
            reverse_code=_on_postgresql("DROP INDEX IF EXISTS post_text_trgm_idx"),
        ),
    ]
