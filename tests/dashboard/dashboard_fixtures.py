"""Fixtures shared by the dashboard tests (imported with `from ... import *`)."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.dashboard.dashboard_factories import UserFactory


@pytest.fixture
def moderator(db):
    return UserFactory(username="mod", role="moderator")


@pytest.fixture
def admin_user(db):
    return UserFactory(username="boss", role="admin")


@pytest.fixture
def analyst(db):
    return UserFactory(username="ana", role="analyst")


@pytest.fixture
def nobody(db):
    return UserFactory(username="norole")


def client_for(user) -> Client:
    c = Client()
    if user is not None:
        c.force_login(user)
    return c


@pytest.fixture
def mod_client(moderator) -> Client:
    return client_for(moderator)


__all__ = ["admin_user", "analyst", "client_for", "mod_client", "moderator", "nobody"]
