"""Compress Score's JSON columns with lz4 instead of PostgreSQL's default pglz.

A Score row is ~2.4 kB (features and per-feature contributions), over the 2 kB threshold at
which PostgreSQL compresses and moves values out of line, so every Score written ran pglz over
its JSON. lz4 compresses several times faster at a similar ratio: inserting the rows of real
scored posts through the worker's json_to_recordset statement cost 0.10-0.16 ms a row with
pglz and 0.065 with lz4 (keeping the rows uncompressed in the heap was no faster and took 50 %
more space). Existing rows keep their compression; only new values use lz4.

PostgreSQL only, from version 14, and only where the server was built with lz4 (Debian's and
the official images are); elsewhere this does nothing and pglz stays."""

from django.db import migrations

COLUMNS = ("features", "contributions")


def _alter(schema_editor, method: str) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql" or connection.pg_version < 140000:
        return
    if method == "lz4":
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)")
            if cursor.fetchone() is None:  # a server built without lz4
                return
    alters = ", ".join(f"ALTER COLUMN {column} SET COMPRESSION {method}" for column in COLUMNS)
    schema_editor.execute(f"ALTER TABLE scoring_score {alters}")


def forwards(apps, schema_editor):
    _alter(schema_editor, "lz4")


def backwards(apps, schema_editor):
    _alter(schema_editor, "default")


class Migration(migrations.Migration):
    dependencies = [("scoring", "0005_drop_redundant_fk_indexes")]

    operations = [migrations.RunPython(forwards, backwards)]
