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

from moderation.models import Post
from scoring.features.extract import posts_for_scoring
from scoring.models import Score
from scoring.services.inference import ScoringClient, TritonError, TritonUnavailable, get_client_with_timeout
from scoring.services.scoring import INITIAL_FROM, infer, persist, prepare

logger = logging.getLogger(__name__)


def _client_for(client: ScoringClient | None, timeout_s: float) -> ScoringClient:
    return client if client is not None else get_client_with_timeout(timeout_s)


def score_inline(*, post: Post, budget_ms: float, client: ScoringClient | None = None) -> Score | None:
    started = time.perf_counter()

    def remaining_s() -> float:
        return budget_ms / 1000.0 - (time.perf_counter() - started)

    loaded = posts_for_scoring([post.pk]).get(post.pk)
    if loaded is None or loaded.status not in INITIAL_FROM:
        return None
    (item,) = prepare([loaded])
    if item.reason is None:
        left = remaining_s()
        if left <= 0:
            return None
        try:
            infer([item], client=_client_for(client, budget_ms / 1000.0))
        except (TritonError, TritonUnavailable) as exc:  # down or too slow: the async task takes over
            logger.info("scoring.inline_fallback post_id=%s reason=%s", post.pk, exc)
            return None
        if item.model_error:
            return None
    # Written even when the call overran the budget: the work is done, and the async task
    # then finds the post scored. The caller still gets None (it already answered 202).
    overran = remaining_s() < 0
    (result,) = persist([item], allowed_from=INITIAL_FROM, started=started)
    if result.score_id is None or overran:
        return None
    post.refresh_from_db(fields=["status", "status_changed_at", "final_score", "model_version", "scored_at"])
    return Score.objects.get(pk=result.score_id)
