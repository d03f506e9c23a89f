"""Impossible or hostile filter values on the dashboard pages and the audit CSV: a form error
and a 400, never a 500."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.dashboard.dashboard_factories import PostFactory, UserFactory
from tests.dashboard.dashboard_fixtures import client_for

pytestmark = pytest.mark.django_db

PAGES = ["dashboard:queue", "dashboard:focus", "dashboard:audit", "dashboard:audit_csv"]
BAD_DATES = [
    {"date_from": "2026-02-30"},
    {"date_to": "0000-00-00"},
    {"date_from": "0001-01-01"},
    {"date_to": "9999-12-31"},
    {"date_from": "2026-13-01", "date_to": "2026-01-32"},
]


@pytest.fixture
def admin_client(db: Any) -> Client:
    PostFactory()
    return client_for(UserFactory(username="u-admin", role="admin"))


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("query", BAD_DATES, ids=lambda q: "&".join(f"{k}={v}" for k, v in q.items()))
def test_an_impossible_date_filter_is_a_400_with_a_form_error(
    admin_client: Client, page: str, query: dict[str, str]
) -> None:
    response = admin_client.get(reverse(page), query)
    assert response.status_code == 400, (response.status_code, response.content[:500])
    assert b"not a valid date" in response.content


@pytest.mark.parametrize("page", [*PAGES, "dashboard:metrics"])
def test_hostile_query_values_never_500(admin_client: Client, page: str) -> None:
    hostile = "actor=%00&score_min=nan&score_max=inf&ip=%00&domain=%ED%A0%80&q=" + "x" * 10_000 + "&cursor=%C0%AF"
    response = admin_client.get(reverse(page), QUERY_STRING=hostile)
    assert response.status_code < 500
    if page != "dashboard:metrics":  # the metrics page takes none of these filters
        assert response.status_code == 400
