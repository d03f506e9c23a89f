"""Drop the single-column indexes Django made for Post's source, author, link and ip foreign
keys: post_source_external_uniq, post_author_idx, post_link_idx and post_ip_idx lead with the
same columns and answer the same lookups (foreign-key checks on delete included). Each was one
more index entry written per post insert and per scoring status update.

Only the indexes go (DROP INDEX); the foreign-key constraints stay as they are, so nothing is
re-validated. The index names are the ones Django derived in 0001_initial (deterministic)."""

import django.db.models.deletion
from django.db import migrations, models

# (field, index name, column) of each dropped index.
DROPPED = [
    ("source", "moderation_post_source_id_af4d7f19", "source_id"),
    ("author", "moderation_post_author_id_097e5dcc", "author_id"),
    ("link", "moderation_post_link_id_9b1ca0d1", "link_id"),
    ("ip", "moderation_post_ip_id_3bb353b8", "ip_id"),
]


class Migration(migrations.Migration):

    dependencies = [
        ('moderation', '0006_json_fields_insert_per_row'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    sql=f'DROP INDEX IF EXISTS "{name}"',
                    reverse_sql=f'CREATE INDEX IF NOT EXISTS "{name}" ON "moderation_post" ("{column}")',
                )
                for _, name, column in DROPPED
            ],
            state_operations=[
                migrations.AlterField(
                    model_name='post',
                    name='author',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='posts', to='moderation.author'),
                ),
                migrations.AlterField(
                    model_name='post',
                    name='ip',
                    field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='posts', to='moderation.ipaddress'),
                ),
                migrations.AlterField(
                    model_name='post',
                    name='link',
                    field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='posts', to='moderation.link'),
                ),
                migrations.AlterField(
                    model_name='post',
                    name='source',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='posts', to='moderation.source'),
                ),
            ],
        ),
    ]
