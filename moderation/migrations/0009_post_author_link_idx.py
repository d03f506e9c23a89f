"""Index (author, link) of the posts that carry a link: how often an author shared this link
becomes a lookup.

The scoring features count an author's posts with the same link (user_link_count). Without
this index PostgreSQL read every post of the author (post_author_text_md5_idx on author_id,
then a filter on link_id): 0.23 ms per scored post for an author with ~335 posts, 80 % of the
worker's batch load (EXPLAIN ANALYZE, benchmarks/e2e_load.py), and linear in the
author's history, as the same-text count was before 0008. Partial: a post without a link has
no pair to count, so it costs this index nothing (the count's `o.link_id = p.link_id` implies
link_id IS NOT NULL, which lets the planner use it).

Built CONCURRENTLY so that applying it to a live database does not block ingest. PostgreSQL
only; on SQLite (the embedded default) the query still works, without the index."""

from django.db import migrations


def _on_postgresql(sql: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("moderation", "0008_post_author_text_md5_idx")]

    operations = [
        migrations.RunPython(
            _on_postgresql(
                "CREATE INDEX CONCURRENTLY IF NOT EXISTS post_author_link_idx "
                "ON moderation_post (author_id, link_id) WHERE link_id IS NOT NULL"
            ),
            reverse_code=_on_postgresql("DROP INDEX CONCURRENTLY IF EXISTS post_author_link_idx"),
        ),
    ]
