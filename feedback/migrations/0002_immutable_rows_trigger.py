"""Reject UPDATE on frozen tables at the database level (PostgreSQL only; SQLite dev databases
rely on the model-level guard)."""

from django.db import migrations

TABLES = ("feedback_labelledexample", "feedback_datasetversion")

CREATE_FUNCTION = """
CREATE OR REPLACE FUNCTION feedback_reject_update() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION '%% rows are immutable once created', TG_TABLE_NAME
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(CREATE_FUNCTION)
    for table in TABLES:
        schema_editor.execute(
            f"CREATE TRIGGER {table}_immutable BEFORE UPDATE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION feedback_reject_update();"
        )


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in TABLES:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_immutable ON {table};")
    schema_editor.execute("DROP FUNCTION IF EXISTS feedback_reject_update();")


class Migration(migrations.Migration):
    dependencies = [("feedback", "0001_labelled_examples_datasets_runs_registry")]

    operations = [migrations.RunPython(forwards, backwards)]
