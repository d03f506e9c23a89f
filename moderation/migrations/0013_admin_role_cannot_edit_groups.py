"""The dashboard admin role loses the auth.group add/change/delete permissions: editing a group
could give any group (its own included) any permission. Users stay manageable through the
role-limited user admin (moderation.admin_users), which cannot touch superuser status,
per-user permissions or groups other than the dashboard roles."""

from django.db import migrations


def drop_group_permissions(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    admin = Group.objects.filter(name="admin").first()
    if admin is None:
        return
    admin.permissions.remove(
        *Permission.objects.filter(
            content_type__app_label="auth",
            content_type__model="group",
            codename__in=["add_group", "change_group", "delete_group"],
        )
    )


def restore_group_permissions(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    admin = Group.objects.filter(name="admin").first()
    if admin is not None:
        admin.permissions.add(
            *Permission.objects.filter(content_type__app_label="auth", content_type__model="group")
        )


class Migration(migrations.Migration):
    dependencies = [
        ("moderation", "0012_api_key_scopes"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(drop_group_permissions, restore_group_permissions)]
