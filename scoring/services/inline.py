"""Synchronous pre-publish check: score a just-ingested post within a time budget.

A chat platform wants the decision before the message is shown, so POST /api/v1/posts?wait_ms=N
calls score_inline after the post is committed. If features + the model call fit in the
budget, the Score is written at once (same write path as the worker) and returned; otherwise
it returns None, the API answers 202, and the post's own task (scoring.tasks.score_batch)
scores it asynchronously.

The inline check and the worker must not race for the post (the loser would wait for the
winner and blow the budget). So the API ingests the post inside `prepublish_hold(budget_ms=N)`,
and scoring's receiver of ingest's announcement (scoring.receivers.on_posts_stored, inside the
ingest transaction, before the commit makes the post visible) calls `inline_hold`: the post's
claim is taken for the inline check (no worker batch can pick the post up as a candidate) and
NO task is published. The held check owns the post:
when it does not decide (budget out, Triton down, an error), score_inline publishes the post's
task on its way out; when it decides, there is nothing left to do. That saves every
decided post a delayed Celery task (a no-op costing 3.5-6 ms of worker CPU, plus its publish
and the broker, benchmarks/RESULTS.md).

A web process that dies mid-check publishes nothing. Two things cover it: the hold is a
short-lived claim (INLINE_HOLD_TTL_S past the budget) that frees itself, and the post is listed
as pending in Redis (same round trip as the claim) until the check ends; the sweeper
(scoring.sweep_stuck_posts, every minute) enqueues every post still listed after its hold
expired, so such a post waits about a minute, not the sweeper's SCORING_SWEEP_AFTER_S. If
Redis is down at ingest, nothing is held: the task is published at once as for any post, and
the inline check claims or waits like a worker. The writes are idempotent (row lock + unique
Score key), so even a claim that expired under a slow inline check cannot produce two scores.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

from django.conf import settings

from moderation.models import Post
from scoring.features.extract import post_with_features, with_campaign_features
from scoring.models import Score
from scoring.services.batching import publish_post
from scoring.services.campaigns import campaigns_detect
from scoring.services.decide import Item
from scoring.services.inference import ScoringClient, TritonError, get_client_with_timeout
from scoring.services.scoring import INITIAL_FROM, POST_SCORE_FIELDS, infer, prepare, settle
from scoring.workqueue import claim_post, hold_token, release_posts

logger = logging.getLogger(__name__)

WAIT_POLL_S = 0.005


@dataclass
class PrePublish:
    """An API request's pending pre-publish check: its budget, and the posts held for it (the
    receiver of posts_stored adds each post it held)."""

    budget_ms: float
    held: set[int] = field(default_factory=set)

    def holds(self, post_id: int) -> bool:
        return post_id in self.held


_PREPUBLISH: ContextVar[PrePublish | None] = ContextVar("scoring_prepublish", default=None)


@contextlib.contextmanager
def prepublish_hold(*, budget_ms: float) -> Iterator[PrePublish]:
    """Ingest inside this block is followed by a pre-publish check of `budget_ms`: a post it
    stores is held for the check instead of getting a task (scoring.receivers). Per request
    (a context variable): other threads and requests are not affected."""
    check = PrePublish(budget_ms=budget_ms)
    reset = _PREPUBLISH.set(check)
    try:
        yield check
    finally:
        _PREPUBLISH.reset(reset)


def prepublish_pending() -> PrePublish | None:
    """The pre-publish check the current ingest is for, if any."""
    return _PREPUBLISH.get()


def _client_for(client: ScoringClient | None, timeout_s: float) -> ScoringClient:
    return client if client is not None else get_client_with_timeout(timeout_s)


def _latest(post: Post) -> Score | None:
    return Score.objects.filter(post_id=post.pk).order_by("-created_at", "-id").first()


def _wait_for_worker(post: Post, remaining_s: Callable[[], float]) -> Score | None:
    pending = Post.objects.filter(pk=post.pk, status__in=INITIAL_FROM)
    while pending.exists():
        left = remaining_s()
        if left <= 0:
            return None
        time.sleep(min(WAIT_POLL_S, left))
    post.refresh_from_db(fields=POST_SCORE_FIELDS)
    return _latest(post)


def score_inline(
    *, post: Post, budget_ms: float, held: bool = False, client: ScoringClient | None = None
) -> Score | None:
    """The post's Score if it was decided within `budget_ms`, else None (the task scores it).

    `held`: the post was held for this check (`prepublish_hold`) and got no task, so
    this check owns the post: when it does not decide (None, or an exception) it publishes
    the post's task (score_batch of the one post) before returning. Otherwise the check claims
    the post like a worker would, and waits for the worker when one has it."""
    decided: Score | None = None
    try:
        decided = _score_inline(post=post, budget_ms=budget_ms, held=held, client=client)
    finally:
        if held and decided is None:
            publish_post(post.pk)
    return decided


def _score_inline(*, post: Post, budget_ms: float, held: bool, client: ScoringClient | None) -> Score | None:
    started = time.perf_counter()

    def remaining_s() -> float:
        return budget_ms / 1000.0 - (time.perf_counter() - started)

    token = hold_token(post.pk) if held else uuid.uuid4().hex
    if not held and not claim_post(post.pk, token):
        # A worker took the post's task first and is scoring it: its answer is as fast as ours.
        return _wait_for_worker(post, remaining_s)
    done: list[int] = []
    try:
        found = post_with_features(post.pk)  # the post, its joins and features: one query
        if found is None:
            return None
        loaded, features = found
        if loaded.status not in INITIAL_FROM:
            _copy_score_fields(loaded, to=post)
            return _latest(post)
        if settings.CAMPAIGN_DETECTION:
            # As a worker batch does, before the model that reads the campaign's counters; a
            # decided campaign then holds the post.
            campaigns_detect(posts=[loaded])
        features = with_campaign_features(loaded, features)
        (item,) = prepare([loaded], features={loaded.pk: features})
        if not _model_answered(item, left_s=remaining_s(), client=client):
            return None
        # Written even when the call overran the budget: the work is done, and the async task
        # then finds the post scored. The caller still gets None (it already answered 202).
        overran = remaining_s() < 0
        (result,) = settle([item], allowed_from=INITIAL_FROM, started=started)
        if result.score is not None:
            # The "done" marker, set with the release (same round trip): the post's delayed
            # task then returns without touching PostgreSQL, as after a worker batch.
            done = [post.pk]
    finally:
        # The check is over (decided or not): off the pending list, same round trip.
        release_posts([post.pk], token, done=done, inline_over=[post.pk] if held else ())
    if overran:
        return None
    if result.score is None:  # another writer got there first (a moderator, a duplicate request)
        post.refresh_from_db(fields=POST_SCORE_FIELDS)
        return _latest(post)
    _copy_score_fields(item.post, to=post)  # settle wrote these fields from item.post
    return result.score


def _model_answered(item: Item, *, left_s: float, client: ScoringClient | None) -> bool:
    """The model's answer for `item` within `left_s` seconds (a short-circuited post needs
    none); False when the budget is gone, Triton is down or slow, or the model failed on it."""
    if item.reason is not None:
        return True
    if left_s <= 0:
        return False
    try:
        infer([item], client=_client_for(client, left_s))
    except TritonError as exc:  # down, or no answer within the budget (TritonUnavailable)
        logger.info("scoring.inline_fallback post_id=%s reason=%s", item.post.pk, exc)
        return False
    return not item.model_error


def _copy_score_fields(source: Post, *, to: Post) -> None:
    for name in POST_SCORE_FIELDS:
        setattr(to, name, getattr(source, name))
