"""Accounts: login throttling and lockout (django-axes) on the dashboard and admin logins, and
roles that cannot escalate through the Django admin."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from axes.models import AccessAttempt, AccessFailureLog
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.test import Client
from django.urls import reverse
from freezegun import freeze_time

from moderation.models import AuditLog
from moderation.permissions import Role

pytestmark = pytest.mark.django_db

LOGINS = [reverse("login"), reverse("admin:login")]
PASSWORD = "correct horse battery staple"


def _user(username: str, **kwargs: Any) -> Any:
    return get_user_model().objects.create_user(username, password=PASSWORD, is_staff=True, **kwargs)


def _login(url: str, username: str, password: str, ip: str) -> Any:
    return Client(REMOTE_ADDR=ip).post(url, {"username": username, "password": password})


def _logged_in(response: Any) -> bool:
    return response.status_code == 302 and "_auth_user_id" in response.wsgi_request.session


@pytest.mark.parametrize("url", LOGINS)
def test_the_right_password_logs_in(url: str) -> None:
    _user("mod")
    assert _logged_in(_login(url, "mod", PASSWORD, "192.0.2.1"))


@pytest.mark.parametrize("url", LOGINS)
def test_repeated_failures_lock_out_the_user_and_the_address(url: str) -> None:
    _user("victim")
    _user("bystander")
    limit = settings.AXES_FAILURE_LIMIT
    assert limit <= 5
    for _ in range(limit):
        assert not _logged_in(_login(url, "victim", "wrong", "192.0.2.1"))

    # Now even the right password is refused, from the same address and from another one.
    for ip in ("192.0.2.1", "198.51.100.9"):
        refused = _login(url, "victim", PASSWORD, ip)
        assert refused.status_code == 429 and not _logged_in(refused), ip
    # The guessing address is locked for other users too; another user elsewhere is not.
    assert _login(url, "bystander", PASSWORD, "192.0.2.1").status_code == 429
    assert _logged_in(_login(url, "bystander", PASSWORD, "203.0.113.5"))

    # Failures are recorded, and the lockout is in the audit log.
    assert AccessFailureLog.objects.filter(username="victim").count() >= limit
    assert AccessAttempt.objects.filter(username="victim").exists()
    entry = AuditLog.objects.filter(action="account.locked_out").first()
    assert entry is not None and entry.after["username"] == "victim"


def test_a_lockout_on_one_login_holds_on_the_other() -> None:
    _user("victim")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _login(reverse("login"), "victim", "wrong", "192.0.2.1")
    assert _login(reverse("admin:login"), "victim", PASSWORD, "198.51.100.9").status_code == 429


def test_fewer_failures_than_the_limit_do_not_lock_and_success_resets() -> None:
    _user("typo")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _login(reverse("login"), "typo", "wrong", "192.0.2.1")
    assert _logged_in(_login(reverse("login"), "typo", PASSWORD, "192.0.2.1"))
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _login(reverse("login"), "typo", "wrong", "192.0.2.1")
    assert _logged_in(_login(reverse("login"), "typo", PASSWORD, "192.0.2.1"))


def test_attempts_during_a_lockout_do_not_extend_it() -> None:
    """The lock ends one cool-off after the failure that set it, however often the username is
    tried meanwhile (the right password included): one try per cool-off cannot keep it locked."""
    _user("victim")
    cool_off = settings.AXES_COOLOFF_TIME
    assert isinstance(cool_off, timedelta) and cool_off > timedelta(minutes=2)
    login = reverse("login")
    with freeze_time(datetime(2026, 3, 1, 12, 0, tzinfo=UTC)) as clock:
        for _ in range(settings.AXES_FAILURE_LIMIT):
            _login(login, "victim", "wrong", "192.0.2.1")
        locked_at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
        for minutes_later in (1, cool_off.total_seconds() / 60 - 1):
            clock.move_to(locked_at + timedelta(minutes=minutes_later))
            for ip in ("192.0.2.1", "198.51.100.9"):
                assert _login(login, "victim", PASSWORD, ip).status_code == 429
                assert _login(login, "victim", "wrong", ip).status_code == 429

        clock.move_to(locked_at + cool_off + timedelta(seconds=1))
        assert _logged_in(_login(login, "victim", PASSWORD, "192.0.2.1"))


# --- roles cannot escalate through the Django admin ---------------------------------------------


@pytest.fixture
def role_admin(client: Client) -> Any:
    """A staff user with the dashboard admin role (not a superuser), logged in."""
    user = _user("boss")
    user.groups.add(Group.objects.get(name=Role.ADMIN.value))
    client.force_login(user)
    return user


def _change(client: Client, user: Any, **fields: Any) -> Any:
    data = {"username": user.username, "is_active": "on", "is_staff": "on", **fields}
    return client.post(reverse("admin:auth_user_change", args=[user.pk]), data)


def test_the_admin_role_cannot_make_itself_superuser_or_grant_permissions(client: Client, role_admin: Any) -> None:
    ops = Group.objects.create(name="ops")
    ops.permissions.add(Permission.objects.get(codename="change_domain"))
    page = client.get(reverse("admin:auth_user_change", args=[role_admin.pk])).content.decode()
    assert 'name="is_superuser"' not in page and 'name="user_permissions"' not in page
    admin_group = Group.objects.get(name=Role.ADMIN.value)
    _change(
        client,
        role_admin,
        is_superuser="on",
        user_permissions=[Permission.objects.get(codename="change_domain").pk],
        groups=[admin_group.pk],
    )
    _change(client, role_admin, groups=[admin_group.pk, ops.pk])  # a group outside the roles
    role_admin.refresh_from_db()
    assert not role_admin.is_superuser
    assert not role_admin.user_permissions.exists()
    assert set(role_admin.groups.values_list("name", flat=True)) == {Role.ADMIN.value}
    assert not role_admin.has_perm("moderation.change_domain")


def test_the_admin_role_cannot_see_or_change_superusers_or_groups(client: Client, role_admin: Any) -> None:
    root = get_user_model().objects.create_superuser("root", "root@example.org", PASSWORD)
    listing = client.get(reverse("admin:auth_user_changelist")).content.decode()
    assert "boss" in listing and ">root<" not in listing
    for url in (
        reverse("admin:auth_user_change", args=[root.pk]),
        reverse("admin:auth_user_password_change", args=[root.pk]),
    ):
        assert client.get(url).status_code in (302, 404), url
    client.post(
        reverse("admin:auth_user_password_change", args=[root.pk]),
        {"password1": "taken-over-1234", "password2": "taken-over-1234"},
    )
    root.refresh_from_db()
    assert root.check_password(PASSWORD)
    group = Group.objects.get(name=Role.ADMIN.value)
    every = list(Permission.objects.values_list("pk", flat=True))
    edited = client.post(reverse("admin:auth_group_change", args=[group.pk]), {"name": "admin", "permissions": every})
    assert edited.status_code == 403
    assert client.get(reverse("admin:auth_group_add")).status_code == 403
    assert not group.permissions.filter(codename="change_domain").exists()
    assert not group.permissions.filter(content_type__model="group").exclude(codename="view_group").exists()


def test_the_admin_role_manages_moderators(client: Client, role_admin: Any) -> None:
    newcomer = get_user_model().objects.create_user("newcomer", password=PASSWORD)
    legacy = Group.objects.create(name="legacy")  # set by a superuser earlier: kept as it is
    newcomer.groups.add(legacy)
    offered = client.get(reverse("admin:auth_user_change", args=[newcomer.pk])).content.decode()
    assert ">legacy<" not in offered and f">{Role.MODERATOR.value}<" in offered
    moderator = Group.objects.get(name=Role.MODERATOR.value)
    response = _change(client, newcomer, groups=[moderator.pk])
    assert response.status_code == 302, response.content.decode()[:3000]
    newcomer.refresh_from_db()
    assert set(newcomer.groups.values_list("name", flat=True)) == {Role.MODERATOR.value, "legacy"}
    assert newcomer.is_staff and not newcomer.is_superuser


def test_a_superuser_keeps_the_full_user_admin(client: Client) -> None:
    root = get_user_model().objects.create_superuser("root", "root@example.org", PASSWORD)
    client.force_login(root)
    page = client.get(reverse("admin:auth_user_change", args=[root.pk])).content.decode()
    assert 'name="is_superuser"' in page and 'name="user_permissions"' in page
