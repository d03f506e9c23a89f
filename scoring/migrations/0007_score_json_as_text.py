"""Keep Score's JSON columns as PostgreSQL `json` (text as written) instead of `jsonb`.

features, contributions and model_versions are written once per scored post and only ever read
back whole; building jsonb parsed every value on insert, about half of the PostgreSQL CPU of a
Score row (0.14 against 0.07 ms a row, benchmarks/RESULTS.md). See
core.db_fields.StoredJSONField.

One ALTER TABLE for the three columns, so the table is rewritten once (Django's AlterField
would rewrite it three times) and the lz4 compression of migration 0006, which a type change
resets, is set again in the same statement. The rewrite holds an exclusive lock on
scoring_score for its duration: scoring waits (posts stay `received` and are scored after, none
is lost) and the dashboard's score panels wait. On a large installation run it in a quiet hour.
Other databases store JSONField as text either way: nothing to do there."""

from django.db import migrations

import core.db_fields

COLUMNS = ("features", "contributions", "model_versions")
COMPRESSED = ("features", "contributions")


def _has_lz4(connection) -> bool:
    if connection.pg_version < 140000:
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)")
        return cursor.fetchone() is not None


def _retype(schema_editor, db_type: str) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    clauses = [f"ALTER COLUMN {c} TYPE {db_type} USING {c}::{db_type}" for c in COLUMNS]
    if _has_lz4(connection):
        clauses += [f"ALTER COLUMN {c} SET COMPRESSION lz4" for c in COMPRESSED]
    schema_editor.execute(f"ALTER TABLE scoring_score {', '.join(clauses)}")


def forwards(apps, schema_editor):
    _retype(schema_editor, "json")


def backwards(apps, schema_editor):
    _retype(schema_editor, "jsonb")


class Migration(migrations.Migration):
    dependencies = [("scoring", "0006_score_json_lz4_compression")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forwards, backwards)],
            state_operations=[
                migrations.AlterField(
                    model_name="score",
                    name="contributions",
                    field=core.db_fields.StoredJSONField(
                        default=dict, help_text="model -> feature -> contribution (pred_contribs)."
                    ),
                ),
                migrations.AlterField(
                    model_name="score",
                    name="features",
                    field=core.db_fields.StoredJSONField(
                        default=dict, help_text="Feature values as seen at scoring time."
                    ),
                ),
                migrations.AlterField(
                    model_name="score",
                    name="model_versions",
                    field=core.db_fields.StoredJSONField(default=dict, help_text="model name -> version."),
                ),
            ],
        )
    ]
