"""Validation cost is bounded by the rules, not by how much bad input a client sends: a list
over its limit is refused before its elements are read, and a list stops being read at its
LIST_ERRORS_MAX-th invalid element. Counted in calls of the step validator, not in time."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.conf import settings

from api.fields import LIST_ERRORS_MAX
from api.serializers import JourneyStepInputSerializer
from moderation.models import Post
from tests.moderation.api_helpers import ApiCaller, iso, post_payload

pytest_plugins = ["tests.moderation.api_fixtures"]
pytestmark = pytest.mark.django_db

BAD_STEP = {"step": "", "at": "not a time"}


@pytest.fixture
def step_validations(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every journey step the serializer validates (the real validation runs)."""
    calls: list[Any] = []
    real = JourneyStepInputSerializer.run_validation

    def counted(self: JourneyStepInputSerializer, data: Any = None) -> Any:
        calls.append(data)
        return real(self, data)

    monkeypatch.setattr(JourneyStepInputSerializer, "run_validation", counted)
    return calls


def _journey_of_bad_steps() -> list[dict[str, str]]:
    return [dict(BAD_STEP) for _ in range(settings.JOURNEY_MAX_STEPS)]


def test_a_post_with_many_bad_steps_is_a_short_400(api: ApiCaller, step_validations: list[Any]):
    payload = post_payload(journey=_journey_of_bad_steps())
    response = api.raw("/api/v1/posts", json.dumps(payload).encode())

    assert response.status_code == 400
    error = response.json()["error"]
    step_paths = {path for path in error["fields"] if path.startswith("journey[")}
    assert step_paths == {f"journey[{i}].{f}" for i in range(LIST_ERRORS_MAX) for f in ("step", "at")}
    assert any(d["field"] == "journey" and d["code"] == "not_checked" for d in error["details"])
    assert len(step_validations) == LIST_ERRORS_MAX
    assert not Post.objects.exists()


def test_a_journey_over_the_limit_is_refused_before_any_step_is_read(api: ApiCaller, step_validations: list[Any]):
    steps = [dict(BAD_STEP) for _ in range(settings.JOURNEY_MAX_STEPS + 1)]
    response = api.raw("/api/v1/posts", json.dumps(post_payload(journey=steps)).encode())
    assert response.status_code == 400
    details = response.json()["error"]["details"]
    assert [(d["field"], d["code"]) for d in details if d["field"].startswith("journey")] == [("journey", "max_length")]
    assert step_validations == []


def test_few_bad_steps_are_all_reported(api: ApiCaller, step_validations: list[Any]):
    steps = [{"step": "tap", "at": iso()}, dict(BAD_STEP), {"step": "send", "at": iso()}, dict(BAD_STEP)]
    response = api.raw("/api/v1/posts", json.dumps(post_payload(journey=steps)).encode())
    fields = response.json()["error"]["fields"]
    assert {"journey[1].step", "journey[1].at", "journey[3].step", "journey[3].at"} <= set(fields)
    assert "journey" not in fields  # nothing was left unchecked
    assert len(step_validations) == len(steps)


def test_a_batch_of_bad_journeys_validates_a_bounded_number_of_steps(api: ApiCaller, step_validations: list[Any]):
    items = 100
    bad = [post_payload(f"p-{i}", journey=_journey_of_bad_steps()) for i in range(items)]
    good = post_payload("good", journey=[{"step": "tap", "at": iso()}])
    response = api.raw("/api/v1/posts/batch", json.dumps({"posts": [*bad, good]}).encode())

    assert response.status_code == 207
    body = response.json()
    assert (body["invalid"], body["created"]) == (items, 1)
    assert Post.objects.get().external_id == "good"
    for row in body["results"][:items]:
        assert row["status"] == "invalid" and row["truncated"] is True
        assert 1 <= sum(len(messages) for messages in row["errors"].values()) <= 10
    # LIST_ERRORS_MAX steps per bad item (instead of all 200), and the good item's one step,
    # validated once by the fast path's fallback at most.
    assert len(step_validations) <= items * LIST_ERRORS_MAX + 1
    assert len(step_validations) >= items * LIST_ERRORS_MAX
