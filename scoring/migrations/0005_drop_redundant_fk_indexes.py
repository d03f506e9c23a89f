"""Drop Score's single-column post_id index: score_post_modelset_rev_uniq (post_id, model_set,
revision) leads with it. One index entry less per Score written. Only the index goes; the
foreign-key constraint stays (nothing re-validated). The name is 0001_initial's (deterministic)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('moderation', '0007_drop_redundant_fk_indexes'),
        ('scoring', '0004_json_fields_insert_per_row'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    sql='DROP INDEX IF EXISTS "scoring_score_post_id_955841f9"',
                    reverse_sql='CREATE INDEX IF NOT EXISTS "scoring_score_post_id_955841f9" ON "scoring_score" ("post_id")',
                ),
            ],
            state_operations=[
                migrations.AlterField(
                    model_name='score',
                    name='post',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='scores', to='moderation.post'),
                ),
            ],
        ),
    ]
