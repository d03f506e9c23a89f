"""Synchronous pre-publish check: score a just-ingested post within a time budget.

A chat platform wants the decision before the message is shown, so POST /api/v1/posts?wait_ms=N
calls score_inline after the post is committed. If features + the model call fit in the
budget, the Score is written at once (same write path as the worker) and returned; otherwise
it returns None, the API answers 202, and the post's score_post task (already enqueued on
commit) scores it asynchronously as usual. Nothing is lost either way: the write is
idempotent, so the task finds the post scored and does nothing."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable

from moderation.models import Post
from scoring.features.extract import posts_for_scoring
from scoring.models import Score
from scoring.services.claims import claim_post, release_posts
from scoring.services.inference import ScoringClient, TritonError, get_client_with_timeout
from scoring.services.scoring import INITIAL_FROM, infer, persist, prepare

logger = logging.getLogger(__name__)

WAIT_POLL_S = 0.005


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
    post.refresh_from_db(fields=["status", "status_changed_at", "final_score", "model_version", "scored_at"])
    return _latest(post)


def score_inline(*, post: Post, budget_ms: float, client: ScoringClient | None = None) -> Score | None:
    """The post's Score if it was decided within `budget_ms`, else None (the task scores it)."""
    started = time.perf_counter()

    def remaining_s() -> float:
        return budget_ms / 1000.0 - (time.perf_counter() - started)

    # The post's own task is already on the broker: claim the post like a worker would, so the
    # two never call the model for the same post; the task then finds it scored.
    token = uuid.uuid4().hex
    if not claim_post(post.pk, token):
        # A worker took the post's task first and is scoring it: its answer is as fast as ours.
        return _wait_for_worker(post, remaining_s)
    try:
        loaded = posts_for_scoring([post.pk]).get(post.pk)
        if loaded is None:
            return None
        if loaded.status not in INITIAL_FROM:
            return _latest(post)
        (item,) = prepare([loaded])
        if item.reason is None:
            left = remaining_s()
            if left <= 0:
                return None
            try:
                infer([item], client=_client_for(client, left))
            except TritonError as exc:  # down, or no answer within the budget (TritonUnavailable)
                logger.info("scoring.inline_fallback post_id=%s reason=%s", post.pk, exc)
                return None
            if item.model_error:
                return None
        # Written even when the call overran the budget: the work is done, and the async task
        # then finds the post scored. The caller still gets None (it already answered 202).
        overran = remaining_s() < 0
        (result,) = persist([item], allowed_from=INITIAL_FROM, started=started)
    finally:
        release_posts([post.pk])
    if overran:
        return None
    post.refresh_from_db(fields=["status", "status_changed_at", "final_score", "model_version", "scored_at"])
    if result.score_id is None:
        return _latest(post)
    return Score.objects.get(pk=result.score_id)
