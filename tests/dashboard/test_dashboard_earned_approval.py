"""The metrics page's earned-approval card: each active source's level, what its models approve
on their own, and what the next step still needs (the arithmetic behind it:
tests/scoring/test_earned_approval.py)."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from moderation.models import PostStatus
from scoring.models import Action
from scoring.services.approval_levels import LevelEvidence, labels_to_open
from scoring.services.earned_approval import HELD_REASON
from tests.dashboard.dashboard_factories import AuthorFactory, PostFactory, ScoreFactory, SourceFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _earned(settings) -> None:
    settings.EARNED_APPROVAL = True
    settings.EARNED_APPROVAL_START_FINAL = 0.05
    settings.EARNED_APPROVAL_START_ABUSE = 0.15
    settings.EARNED_APPROVAL_MAX_SHARE = 0.05
    settings.EARNED_APPROVAL_MIN_LABELS = 50


def _row(html: str, source: str) -> str:
    match = re.search(rf'<tr data-approval-source="{source}">(.*?)</tr>', html, re.S)
    assert match, html
    return match.group(1)


def test_the_card_says_each_sources_level_and_what_the_next_step_needs(mod_client) -> None:
    new = SourceFactory(name="New", approval_level=0.0)
    author = AuthorFactory(source=new)
    for _ in range(40):  # the first step's slice: 40 the gate held, approved by a moderator
        post = PostFactory(source=new, author=author, status=PostStatus.APPROVED, final_score=0.06)
        ScoreFactory(post=post, final_score=0.06, action=Action.QUEUE, routing_reason=f"{HELD_REASON}: score")
    SourceFactory(name="Trusted", approval_level=1.0)
    html = mod_client.get(reverse("dashboard:metrics")).content.decode()
    row = _row(html, "New")
    assert 'data-metric="approval-level">0.00<' in row
    assert "score under 0.050, abuse under 0.150" in row
    assert "0.25: 0 of 40" in row
    assert f"at least {labels_to_open(LevelEvidence(0.25, 40, 0))}" in row
    assert "the policy's full band is open" in _row(html, "Trusted")
    assert "score under 0.200, abuse under 0.500" in _row(html, "Trusted")


def test_the_labels_a_step_needs_are_the_fewest_that_open_it() -> None:
    assert labels_to_open(LevelEvidence(0.25, 0, 0)) == 73  # 0 of 73: upper bound 4.99 %
    assert labels_to_open(LevelEvidence(0.25, 73, 0)) == 0
    assert labels_to_open(LevelEvidence(0.25, 70, 0)) == 3
    needed = labels_to_open(LevelEvidence(0.25, 100, 5))
    assert needed is not None
    assert LevelEvidence(0.25, 100 + needed, 5).earned and not LevelEvidence(0.25, 99 + needed, 5).earned
    assert labels_to_open(LevelEvidence(0.25, 600, 600)) is None  # 600 removed: over 5 % past the cap


def test_no_card_when_switched_off(mod_client, settings) -> None:
    settings.EARNED_APPROVAL = False
    SourceFactory(name="New", approval_level=0.0)
    assert "data-earned-approval" not in mod_client.get(reverse("dashboard:metrics")).content.decode()


def test_the_card_costs_one_query_per_gated_source(mod_client) -> None:
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert mod_client.get(reverse("dashboard:metrics")).status_code == 200
        return len(captured.captured_queries)

    SourceFactory(name="A", approval_level=0.0)
    SourceFactory(name="Full", approval_level=1.0)
    one = queries()
    SourceFactory(name="B", approval_level=0.0)
    SourceFactory(name="C", approval_level=0.5)
    SourceFactory(name="Full too", approval_level=1.0)
    assert queries() == one + 2  # two more gated sources: an aggregate each; a full band reads nothing
