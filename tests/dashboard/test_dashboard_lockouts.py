"""The login lockouts page: admins see the locks in force and lift one; the lift is audited."""

from __future__ import annotations

from typing import Any

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from moderation.models import AuditLog
from tests.dashboard.dashboard_factories import UserFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403
from tests.dashboard.dashboard_fixtures import client_for

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"
GUESSER = "192.0.2.1"


def _login(username: str, password: str, ip: str) -> Any:
    return Client(REMOTE_ADDR=ip).post(reverse("login"), {"username": username, "password": password})


@pytest.fixture
def locked_victim() -> Any:
    victim = get_user_model().objects.create_user("victim", password=PASSWORD, is_staff=True)
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _login("victim", "wrong", GUESSER)
    assert _login("victim", PASSWORD, "198.51.100.9").status_code == 429
    return victim


def test_an_admin_sees_the_locks_and_lifts_one(admin_user: Any, locked_victim: Any) -> None:
    client = client_for(admin_user)
    page = client.get(reverse("dashboard:lockouts"))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-lockout="username:victim"' in html and f'data-lockout="ip_address:{GUESSER}"' in html

    lifted = client.post(reverse("dashboard:lockout_unlock"), {"kind": "username", "value": "victim"})
    assert lifted.status_code == 302 and lifted["Location"] == reverse("dashboard:lockouts")
    assert not AccessAttempt.objects.filter(username="victim").exists()
    assert 'data-lockout="username:victim"' not in client.get(reverse("dashboard:lockouts")).content.decode()
    assert _login("victim", PASSWORD, "198.51.100.9").status_code == 302

    entry = AuditLog.objects.get(action="account.unlocked")
    assert entry.actor == admin_user
    assert (entry.target_type, entry.target_id) == ("user", "victim")
    assert entry.before["attempt_rows"] >= 1


def test_lifting_an_address_lock_keeps_the_username_lock_of_others(admin_user: Any, locked_victim: Any) -> None:
    get_user_model().objects.create_user("bystander", password=PASSWORD, is_staff=True)
    assert _login("bystander", PASSWORD, GUESSER).status_code == 429  # the address is locked
    response = client_for(admin_user).post(
        reverse("dashboard:lockout_unlock"), {"kind": "ip_address", "value": GUESSER}
    )
    assert response.status_code == 302
    assert _login("bystander", PASSWORD, GUESSER).status_code == 302
    entry = AuditLog.objects.get(action="account.unlocked")
    assert (entry.target_type, entry.target_id) == ("ip_address", GUESSER)


@pytest.mark.parametrize("role", ["moderator", "analyst", "norole"])
def test_only_admins_see_or_lift_locks(role: str, locked_victim: Any) -> None:
    client = client_for(UserFactory(username=f"u-{role}", role=None if role == "norole" else role))
    assert client.get(reverse("dashboard:lockouts")).status_code == 403
    response = client.post(reverse("dashboard:lockout_unlock"), {"kind": "username", "value": "victim"})
    assert response.status_code == 403
    assert AccessAttempt.objects.filter(username="victim").exists()
    assert not AuditLog.objects.filter(action="account.unlocked").exists()


def test_anonymous_is_sent_to_the_login(locked_victim: Any) -> None:
    response = Client().post(reverse("dashboard:lockout_unlock"), {"kind": "username", "value": "victim"})
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert AccessAttempt.objects.filter(username="victim").exists()


@pytest.mark.parametrize("data", [{"kind": "password", "value": "victim"}, {"kind": "username", "value": ""}, {}])
def test_a_bad_unlock_is_a_400_and_changes_nothing(admin_user: Any, locked_victim: Any, data: dict[str, str]) -> None:
    response = client_for(admin_user).post(reverse("dashboard:lockout_unlock"), data)
    assert response.status_code == 400
    assert AccessAttempt.objects.filter(username="victim").exists()
    assert not AuditLog.objects.filter(action="account.unlocked").exists()


def test_unlock_takes_post_only(admin_user: Any) -> None:
    assert client_for(admin_user).get(reverse("dashboard:lockout_unlock")).status_code == 405
