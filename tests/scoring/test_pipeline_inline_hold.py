"""The pre-publish check and the worker do not race for a post: ingest with ?wait_ms holds
the post for the inline check before the commit and publishes no task; the check publishes the
post's task (score_batch of the one post) only when it does not decide, and the sweeper enqueues a post whose
check died with its web process (scoring.services.inline)."""

from __future__ import annotations

import time
import types
from typing import Any

import pytest
from django.core.cache import cache

from moderation.models import PostStatus
from moderation.services.ingest import post_ingest
from scoring import tasks
from scoring.api import prepublish_hold
from scoring.models import Score
from scoring.services.batching import PostClaimed, score_batch
from scoring.services.inline import score_inline
from scoring.workqueue import claim_key, overdue_holds, pending_key, posts_done
from tests.scoring.pipeline_support import FakeClient, down_client, make_source

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clean_cache")]


@pytest.fixture
def published(monkeypatch) -> list[tuple[str, tuple[Any, ...], float]]:
    """score_batch publishes (a kick: without ids), recorded instead of sent: (how, args,
    countdown)."""
    sent: list[tuple[str, tuple[Any, ...], float]] = []

    def delay(*args: Any) -> None:
        sent.append(("delay", args, 0.0) if args else ("kick", (), 0.0))

    monkeypatch.setattr(tasks.score_batch, "delay", delay)
    monkeypatch.setattr(
        tasks.score_batch, "apply_async", lambda args, countdown=0.0: sent.append(("apply_async", args, countdown))
    )
    return sent


def payload(n: int) -> dict[str, Any]:
    return {
        "external_id": f"hold-{n}",
        "text": "win a free phone, spam",
        "author": {"external_id": "u-1"},
        "created_at": "2026-11-21T10:00:03Z",
    }


def _ingest(n: int, budget_ms: int | None, capture) -> Any:
    source = make_source()
    with capture(execute=True):
        if budget_ms is None:
            post, created = post_ingest(source=source, payload=payload(n))
        else:
            with prepublish_hold(budget_ms=budget_ms):
                post, created = post_ingest(source=source, payload=payload(n))
    assert created
    return post


def test_without_wait_ms_a_kick_is_published_at_once_and_nothing_is_held(published, django_capture_on_commit_callbacks):
    post = _ingest(1, None, django_capture_on_commit_callbacks)
    assert published == [("kick", (), 0.0)]
    assert cache.get(claim_key(post.pk)) is None


def _pending() -> list[int]:
    key = cache.make_key(pending_key())
    # cache._cache: Django's RedisCache internals, which django-stubs does not declare
    return [int(m) for m in cache._cache.get_client(key).zrange(key, 0, -1)]  # type: ignore[attr-defined]


def test_the_held_post_is_the_inline_checks_and_a_decided_post_gets_no_task(
    published, django_capture_on_commit_callbacks, django_assert_num_queries
):
    post = _ingest(2, 50, django_capture_on_commit_callbacks)
    # held before the commit, listed as pending, and no task published
    assert cache.get(claim_key(post.pk)) is not None
    assert _pending() == [post.pk]
    assert published == []

    # a worker meeting the post now (its task, or a batch looking for candidates) keeps off it
    worker_client = FakeClient()
    with pytest.raises(PostClaimed):
        score_batch(post_ids=[post.pk], client=worker_client)
    assert worker_client.calls == []

    inline_client = FakeClient()
    score = score_inline(post=post, budget_ms=1000, held=True, client=inline_client)
    assert score is not None and score.post_id == post.pk
    assert post.status == PostStatus.AUTO_REMOVED and post.final_score == score.final_score
    assert Score.objects.get(post=post).pk == score.pk
    assert [len(c) for c in inline_client.calls] == [1]
    assert cache.get(claim_key(post.pk)) is None  # released
    assert _pending() == [] and overdue_holds() == []
    assert published == []  # decided: no task at all

    # a task for it anyway (a platform resending, the sweeper): nothing left to do, no model
    # call, no claim round trip, and (the inline check marked the post done) no query either
    assert posts_done([post.pk]) == {post.pk}
    with django_assert_num_queries(0):
        (result,) = score_batch(post_ids=[post.pk], client=worker_client)
    assert result.skipped == "done"
    assert worker_client.calls == [] and Score.objects.filter(post=post).count() == 1


def test_when_the_inline_check_gives_up_it_publishes_the_task_that_scores_the_post(
    published, django_capture_on_commit_callbacks
):
    post = _ingest(3, 50, django_capture_on_commit_callbacks)
    assert published == []
    assert score_inline(post=post, budget_ms=50, held=True, client=down_client()) is None
    assert cache.get(claim_key(post.pk)) is None  # the hold is released on the way out
    assert _pending() == []
    assert published == [("delay", ([post.pk],), 0.0)]  # published by the check, at once
    worker_client = FakeClient()
    score_batch(post_ids=[post.pk], client=worker_client)
    assert [len(c) for c in worker_client.calls] == [1]
    assert Score.objects.filter(post=post).count() == 1


def test_a_check_that_raises_still_publishes_the_task(published, django_capture_on_commit_callbacks, monkeypatch):
    post = _ingest(5, 50, django_capture_on_commit_callbacks)

    def boom(post_id: int) -> None:
        raise RuntimeError("database went away")

    monkeypatch.setattr("scoring.services.inline.post_with_features", boom)
    with pytest.raises(RuntimeError):
        score_inline(post=post, budget_ms=50, held=True, client=FakeClient())
    assert published == [("delay", ([post.pk],), 0.0)]
    assert _pending() == []


def test_a_hold_whose_web_process_died_is_enqueued_by_the_sweeper_once_it_expired(
    published, django_capture_on_commit_callbacks, monkeypatch
):
    post = _ingest(4, 50, django_capture_on_commit_callbacks)
    key = claim_key(post.pk)
    # The hold is short-lived: a few seconds, not the worker's SCORING_CLAIM_TTL_S.
    # cache._cache: Django's RedisCache internals, which django-stubs does not declare
    ttl = cache._cache.get_client(key).ttl(cache.make_key(key))  # type: ignore[attr-defined]
    assert 0 < ttl <= 3
    # The web process dies here: no check, no task. While the hold lasts the sweeper leaves
    # the post alone (a live check may still decide it) ...
    assert published == []
    assert tasks.sweep_stuck_posts() == 0
    # ... once the hold is over it enqueues the post, once.
    later = time.time() + ttl + 1
    monkeypatch.setattr("scoring.workqueue.time", types.SimpleNamespace(time=lambda: later))
    assert tasks.sweep_stuck_posts() == 1
    assert published == [("delay", ([post.pk],), 0.0)]
    assert tasks.sweep_stuck_posts() == 0 and _pending() == []
    with pytest.raises(PostClaimed):  # the task retries while the claim lasts ...
        score_batch(post_ids=[post.pk], client=FakeClient())
    cache.delete(key)  # ... and scores the post once it has expired
    score_batch(post_ids=[post.pk], client=FakeClient())
    assert Score.objects.filter(post=post).count() == 1
