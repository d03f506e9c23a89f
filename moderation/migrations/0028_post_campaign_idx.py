"""Index (campaign, received_at) of the posts in a campaign: the campaign page, the campaign
cluster action and the member recount read a campaign's posts. Partial: most posts are in no
campaign and cost this index nothing.

Built CONCURRENTLY on PostgreSQL so that applying it to a live database does not block ingest;
elsewhere (SQLite, the embedded default) the schema editor creates it as usual."""

from django.db import migrations, models

INDEX = models.Index(
    fields=["campaign", "received_at"], name="post_campaign_idx", condition=models.Q(campaign__isnull=False)
)


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS post_campaign_idx "
            "ON moderation_post (campaign_id, received_at) WHERE campaign_id IS NOT NULL"
        )
    else:
        schema_editor.add_index(apps.get_model("moderation", "Post"), INDEX)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX CONCURRENTLY IF EXISTS post_campaign_idx")
    else:
        schema_editor.remove_index(apps.get_model("moderation", "Post"), INDEX)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("moderation", "0027_campaigns")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="post", index=INDEX)],
            database_operations=[migrations.RunPython(create, reverse_code=drop)],
        ),
    ]
