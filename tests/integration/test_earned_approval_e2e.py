"""Earned approval end to end: API ingest, a real Celery worker with earned approval switched on
(the test settings leave it off for every other test), a real Triton serving the tiny models.
The policy approves every score and the start of the band approves nothing, so at level 0 only
the earned approval can queue a post; the posts a moderator approved are the evidence the level
is earned from (the arithmetic: tests/scoring/test_earned_approval.py); at level 1 the policy's
band applies."""

from __future__ import annotations

import pytest
from django.test import override_settings
from django.utils import timezone

from moderation.models import Post, PostStatus
from scoring.models import Action
from scoring.services.approval_levels import level_evidence
from scoring.services.policy import policy_active
from tests.integration.conftest import set_policy, wait_until
from tests.integration.test_pipeline_e2e import SCORED_TIMEOUT, all_scored, payload

pytestmark = pytest.mark.integration

EARNED = {"EARNED_APPROVAL": "true", "EARNED_APPROVAL_START_FINAL": "0", "EARNED_APPROVAL_START_ABUSE": "0"}


def _ingest(api, n: int) -> Post:
    body = payload(n, text=f"see you at the station at {n} o'clock, bring the tickets")
    del body["url"]
    response = api.post("posts", body)
    assert response.status_code == 201, response.content
    return Post.objects.get(pk=response.json()["id"])


def test_a_new_source_queues_what_it_has_not_earned_and_approves_once_it_has(api, start_worker):
    worker = start_worker(**EARNED)
    set_policy(remove=1.0, approve=1.0)  # every score would auto-approve
    assert api.source.approval_level == 0.0
    first = _ingest(api, 1)
    wait_until(lambda: all_scored([first.pk]), timeout=SCORED_TIMEOUT, message=worker.log_tail())
    first.refresh_from_db()
    assert first.status == PostStatus.QUEUED
    score = first.scores.get()
    assert score.action == Action.QUEUE
    assert score.routing_reason == f"approval not yet earned: score {score.final_score:.3f} >= 0.000"

    # A moderator approves the queued posts: each is evidence for exactly one step's slice of the
    # band (the tiny models serve no abuse score, so the final score alone places it).
    posts = [first] + [_ingest(api, n) for n in range(2, 31)]
    wait_until(lambda: all_scored([p.pk for p in posts]), timeout=SCORED_TIMEOUT, message=worker.log_tail())
    decided = Post.objects.filter(pk__in=[p.pk for p in posts])
    assert set(decided.values_list("status", flat=True)) == {PostStatus.QUEUED}
    assert decided.update(status=PostStatus.APPROVED) == 30
    with override_settings(EARNED_APPROVAL=True, EARNED_APPROVAL_START_FINAL=0.0, EARNED_APPROVAL_START_ABUSE=0.0):
        evidence = level_evidence(api.source, policy_active(), now=timezone.now())
    assert sum(e.labelled for e in evidence) == 30 and sum(e.removed for e in evidence) == 0

    # The level the update would reach with more labels, set as an admin may: the worker reads it
    # from the source row with the post, no restart.
    api.source.approval_level = 1.0
    api.source.save(update_fields=["approval_level"])
    later = _ingest(api, 31)
    wait_until(lambda: all_scored([later.pk]), timeout=SCORED_TIMEOUT, message=worker.log_tail())
    later.refresh_from_db()
    assert later.status == PostStatus.AUTO_APPROVED
    assert later.scores.get().routing_reason == ""
