"""A platform reads how often the automation is wrong on its own content: its source's
spot-check figures over the API, never another source's."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from moderation.models import ApiScope, PostStatus
from scoring.models import Action, Score
from scoring.services.earned_approval import HELD_REASON
from tests.factories import create_api_key
from tests.moderation.api_helpers import ApiCaller
from tests.scoring.pipeline_support import make_post

pytest_plugins = ["tests.moderation.api_fixtures"]
pytestmark = pytest.mark.django_db


def _drawn(source, status: str, action: str, *, days_ago: float = 1.0):
    return make_post(
        source=source, status=status, spot_check_action=action, received_at=timezone.now() - timedelta(days=days_ago)
    )


def test_a_source_reads_its_own_figures(api, other_api):
    for status in (PostStatus.REMOVED, PostStatus.APPROVED, PostStatus.APPROVED, PostStatus.AUTO_APPROVED):
        _drawn(api.source, status, Action.APPROVE)
    _drawn(api.source, PostStatus.APPROVED, Action.REMOVE)
    _drawn(api.source, PostStatus.REMOVED, Action.APPROVE, days_ago=40)  # outside the default 30 days
    for _ in range(5):  # another source's misses never count here
        _drawn(other_api.source, PostStatus.REMOVED, Action.APPROVE)
    response = api.get("/api/v1/spot-checks")
    assert response.status_code == 200, response.content
    body = response.json()
    approve, remove = body["approve"], body["remove"]
    assert (approve["checked"], approve["wrong"], approve["waiting"]) == (3, 1, 1)
    assert approve["share"] == pytest.approx(1 / 3) and approve["coverage"] == pytest.approx(0.75)
    assert approve["possible"] == pytest.approx([0.25, 0.5])
    low, high = approve["interval"]
    assert 0 < low < 1 / 3 < high < 1
    assert (remove["checked"], remove["wrong"], remove["share"]) == (1, 1, 1.0)
    longer = api.get("/api/v1/spot-checks", {"days": 60}).json()["approve"]
    assert (longer["checked"], longer["wrong"]) == (4, 2)
    assert api.get("/api/v1/spot-checks", {"days": 1}).json()["approve"]["checked"] == 0  # a day ago is outside
    since = datetime.fromisoformat(api.get("/api/v1/spot-checks", {"days": 365}).json()["since"])
    assert abs(since - (timezone.now() - timedelta(days=365))) < timedelta(minutes=1)
    theirs = other_api.get("/api/v1/spot-checks").json()["approve"]
    assert (theirs["checked"], theirs["wrong"]) == (5, 5)


def test_nothing_drawn_is_no_information(api):
    body = api.get("/api/v1/spot-checks").json()
    assert body["approve"] == {
        "checked": 0,
        "wrong": 0,
        "waiting": 0,
        "share": None,
        "interval": [0.0, 1.0],
        "coverage": None,
        "possible": None,
    }


@pytest.mark.parametrize("days", ["0", "366", "soon", ""])
def test_a_bad_window_is_a_400_naming_it(api, days: str):
    response = api.get("/api/v1/spot-checks", {"days": days})
    assert response.status_code == 400
    assert "days" in response.json()["error"]["fields"]


def test_the_read_scope_is_needed(api):
    writer = ApiCaller(api.source, create_api_key(api.source, scopes=[ApiScope.POSTS_WRITE]))
    response = writer.get("/api/v1/spot-checks")
    assert response.status_code == 403 and response.json()["error"]["code"] == "insufficient_scope"


def test_a_source_reads_its_own_approval_level_and_what_its_next_step_needs(api, other_api, settings):
    settings.EARNED_APPROVAL = True
    settings.EARNED_APPROVAL_START_FINAL = 0.05
    settings.EARNED_APPROVAL_START_ABUSE = 0.15
    settings.EARNED_APPROVAL_MAX_SHARE = 0.05
    settings.EARNED_APPROVAL_MIN_LABELS = 50

    def held(source, status: str) -> None:  # a post of the first step's slice the gate held, since decided
        post = make_post(source=source, status=status, final_score=0.06)
        Score.objects.create(
            post=post, model_set="m", final_score=0.06, action=Action.QUEUE, routing_reason=f"{HELD_REASON}: score"
        )

    for status in (PostStatus.APPROVED,) * 30 + (PostStatus.REMOVED,):
        held(api.source, status)
    for _ in range(40):  # another source's labels never count here
        held(other_api.source, PostStatus.APPROVED)
    approval = api.get("/api/v1/spot-checks").json()["approval"]
    assert approval["level"] == 0.0
    assert approval["approves_below_score"] == pytest.approx(0.05)
    assert approval["approves_below_abuse"] == pytest.approx(0.15)
    step = approval["next_step"]
    assert (step["level"], step["labelled"], step["removed"]) == (0.25, 31, 1)
    assert 1 / 31 < step["upper_bound"] < 1
    assert step["labels_to_open"] > 0
    other_api.source.approval_level = 1.0
    other_api.source.save(update_fields=["approval_level"])
    theirs = other_api.get("/api/v1/spot-checks").json()["approval"]
    assert theirs["next_step"] is None and theirs["approves_below_score"] == pytest.approx(0.2)
    settings.EARNED_APPROVAL = False
    assert api.get("/api/v1/spot-checks").json()["approval"] is None
