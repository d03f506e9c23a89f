"""Data: the three dashboard roles (groups) and the default reason codes."""

from django.db import migrations

ROLES = ("moderator", "admin", "analyst")

# (app_label, model) whose every permission the admin role gets in the Django admin:
# thresholds (policy), API keys, sources, reason codes and users.
ADMIN_MODELS = (
    ("scoring", "decisionpolicy"),
    ("moderation", "apikey"),
    ("moderation", "source"),
    ("moderation", "reasoncode"),
    ("auth", "user"),
    ("auth", "group"),
)

REASON_CODES = (
    # code, label, applies_to, ordering
    ("commercial-spam", "Commercial spam / advertising", "spam", 10),
    ("phishing", "Phishing or credential theft", "spam", 20),
    ("malware", "Malware or malicious link", "spam", 30),
    ("scam", "Scam or fraud", "spam", 40),
    ("bot-activity", "Automated / bot activity", "spam", 50),
    ("repetitive", "Repetitive or flooding content", "spam", 60),
    ("abuse", "Abuse or harassment", "spam", 70),
    ("legitimate", "Legitimate content", "ham", 110),
    ("false-report", "Reports unfounded", "ham", 120),
    ("trusted-link", "Link is trustworthy", "ham", 130),
)


def forwards(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    # Permissions are normally created after migrate; make sure they exist now.
    for app_config in apps.get_app_configs():
        previous = getattr(app_config, "models_module", None)
        app_config.models_module = previous or True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = previous

    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name in ROLES:
        Group.objects.get_or_create(name=name)
    admin = Group.objects.get(name="admin")
    for app_label, model in ADMIN_MODELS:
        admin.permissions.add(
            *Permission.objects.filter(content_type__app_label=app_label, content_type__model=model)
        )

    ReasonCode = apps.get_model("moderation", "ReasonCode")
    for code, label, applies_to, ordering in REASON_CODES:
        ReasonCode.objects.get_or_create(
            code=code, defaults={"label": label, "applies_to": applies_to, "ordering": ordering}
        )


def backwards(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()
    apps.get_model("moderation", "ReasonCode").objects.filter(code__in=[c[0] for c in REASON_CODES]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("moderation", "0001_initial"),
        ("scoring", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
