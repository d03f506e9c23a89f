"""Labelled examples stay immutable except for one update: retention's anonymisation
(feedback.services.retention), which may clear the author's external id and the URL and set the
post id to `expired-...`, changing no other column. Any other update is still refused."""

from django.db import migrations

EXAMPLE_FUNCTION = """
CREATE OR REPLACE FUNCTION feedback_example_reject_update() RETURNS trigger AS $$
DECLARE
    anonymised text[] := ARRAY['author_external_id', 'url', 'post_external_id'];
BEGIN
    IF NEW.author_external_id = '' AND NEW.url = '' AND NEW.post_external_id LIKE 'expired-%%'
       AND (to_jsonb(NEW) - anonymised) = (to_jsonb(OLD) - anonymised) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION '%% rows are immutable once created', TG_TABLE_NAME
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(EXAMPLE_FUNCTION)
    schema_editor.execute("DROP TRIGGER IF EXISTS feedback_labelledexample_immutable ON feedback_labelledexample;")
    schema_editor.execute(
        "CREATE TRIGGER feedback_labelledexample_immutable BEFORE UPDATE ON feedback_labelledexample "
        "FOR EACH ROW EXECUTE FUNCTION feedback_example_reject_update();"
    )


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("DROP TRIGGER IF EXISTS feedback_labelledexample_immutable ON feedback_labelledexample;")
    schema_editor.execute(
        "CREATE TRIGGER feedback_labelledexample_immutable BEFORE UPDATE ON feedback_labelledexample "
        "FOR EACH ROW EXECUTE FUNCTION feedback_reject_update();"
    )
    schema_editor.execute("DROP FUNCTION IF EXISTS feedback_example_reject_update();")


class Migration(migrations.Migration):
    dependencies = [("feedback", "0007_dataset_erasure_models_to_retrain")]

    operations = [migrations.RunPython(forwards, backwards)]
