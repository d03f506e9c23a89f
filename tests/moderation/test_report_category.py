"""A report carries the policy category of its reason, in the API answer and the row."""

from __future__ import annotations

import pytest

from moderation.models import Report
from tests.moderation.api_helpers import ApiCaller, post_payload

pytest_plugins = ["tests.moderation.api_fixtures"]
pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("reason", "category"), [("spam", "spam"), ("harassment", "abuse"), ("misc", "other")])
def test_a_report_is_filed_under_its_reasons_category(api: ApiCaller, reason: str, category: str):
    api.post("/api/v1/posts", post_payload("p-cat"))
    response = api.post("/api/v1/reports", {"post_external_id": "p-cat", "reporter_id": "r-1", "reason": reason})
    assert response.status_code == 201, response.json()
    assert response.json()["category"] == category
    assert Report.objects.get(pk=response.json()["id"]).category == category
