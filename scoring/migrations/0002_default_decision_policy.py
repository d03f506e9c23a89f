"""Version 1 of the decision policy: remove >= 0.90, approve < 0.20, queue in between
(documented in scoring/services/policy.py)."""

from django.db import migrations


def create_default_policy(apps, schema_editor):
    DecisionPolicy = apps.get_model("scoring", "DecisionPolicy")
    if not DecisionPolicy.objects.exists():
        DecisionPolicy.objects.create(
            version=1,
            remove_threshold=0.9,
            approve_threshold=0.2,
            is_active=True,
            note="Default: auto-remove >= 0.90, auto-approve < 0.20, queue in between.",
        )


def remove_default_policy(apps, schema_editor):
    DecisionPolicy = apps.get_model("scoring", "DecisionPolicy")
    DecisionPolicy.objects.filter(version=1, created_by__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [("scoring", "0001_initial")]

    operations = [migrations.RunPython(create_default_policy, remove_default_policy)]
