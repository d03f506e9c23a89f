"""Score.spot_check: the automatic decisions drawn for a moderator to confirm, with a partial
index that only those rows pay an entry in.

The column has a database default, so adding it rewrites nothing. The index is built
CONCURRENTLY on PostgreSQL so that applying it to a live database does not block scoring (a
plain CREATE INDEX scans the whole score table under a lock that stops writes); elsewhere the
schema editor creates it as usual."""

from django.db import migrations, models

INDEX = models.Index(fields=["created_at"], name="score_spot_check_idx", condition=models.Q(spot_check=True))


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS score_spot_check_idx ON scoring_score (created_at) "
            "WHERE spot_check"
        )
    else:
        schema_editor.add_index(apps.get_model("scoring", "Score"), INDEX)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX CONCURRENTLY IF EXISTS score_spot_check_idx")
    else:
        schema_editor.remove_index(apps.get_model("scoring", "Score"), INDEX)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("scoring", "0013_campaign_buckets")]

    operations = [
        migrations.AddField(
            model_name="score",
            name="spot_check",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="score", index=INDEX)],
            database_operations=[migrations.RunPython(create, reverse_code=drop)],
        ),
    ]
