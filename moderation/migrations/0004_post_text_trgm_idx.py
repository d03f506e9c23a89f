"""Trigram index for the dashboard's text search (queue filter `q`).

Django's icontains on PostgreSQL is `UPPER(text::text) LIKE UPPER('%term%')`; a GIN trigram
index on the same expression turns it from a scan of every queued post into an index lookup.
Raw SQL because the expression index with an operator class is PostgreSQL-only."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("moderation", "0003_merge_roles_and_status_changed_at")]

    operations = [
        migrations.RunSQL(
            "CREATE EXTENSION IF NOT EXISTS pg_trgm",
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.RunSQL(
            "CREATE INDEX IF NOT EXISTS post_text_trgm_idx ON moderation_post USING gin ((UPPER(text::text)) gin_trgm_ops)",
            reverse_sql="DROP INDEX IF EXISTS post_text_trgm_idx",
        ),
    ]
