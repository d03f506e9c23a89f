"""Index (author, md5(text)): how often an author posted this exact text becomes a lookup.

The scoring features count an author's posts with the same text (user_post_count). Without
this index PostgreSQL reads every post of the author and compares texts: 0.26 ms per scored
post for an author with ~260 posts (EXPLAIN ANALYZE of the worker's batch load), and linear in
the author's history, so a prolific spammer made every one of their posts dearer to score. The
query compares md5(text) to reach this index, then the texts themselves (a hash collision never
counts). An md5 rather than the text: a btree entry is bounded (a text can be 10,000
characters) and small.

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

    dependencies = [("moderation", "0007_drop_redundant_fk_indexes")]

    operations = [
        migrations.RunPython(
            _on_postgresql(
                "CREATE INDEX CONCURRENTLY IF NOT EXISTS post_author_text_md5_idx "
                "ON moderation_post (author_id, md5(text))"
            ),
            reverse_code=_on_postgresql("DROP INDEX CONCURRENTLY IF EXISTS post_author_text_md5_idx"),
        ),
    ]
