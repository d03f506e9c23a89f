"""What scoring does when ingest announces something (moderation.signals): new posts get their
scoring task, a reported post its re-score, each published after the commit. Connected in
scoring.apps.ScoringConfig.ready; moderation imports nothing of scoring.

- posts_stored, one post: a kick (scoring.services.batching.score_kick: one score_batch message
  without ids unless one is pending), or, inside an API pre-publish check
  (scoring.services.inline.prepublish_hold), the post's hold for that check, taken before the
  commit makes the post visible, and no task (the check publishes one if it does not decide).
- posts_stored, a batch request: one score_batch message per SCORING_BATCH_SIZE posts.
- post_reported: a post still waiting gets a score_batch of its own (`after_report`: read even
  when a batch marked it done); a scored one gets rescore_post, which writes the next revision.

A broker outage never fails the ingest: the publish is logged and skipped, the post stays in
`received`, and the sweeper re-enqueues it."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from django.db import transaction

from core import redis_breaker
from moderation.models import Post, PostStatus
from scoring import tasks
from scoring.services import inline
from scoring.services.batching import publish_batch, score_kick
from scoring.workqueue import inline_hold

logger = logging.getLogger(__name__)

# The circuit (core.redis_breaker) of this process's scoring publishes. A broker that hangs
# makes each publish wait out its socket timeout (2 s) before failing; for
# BROKER_PUBLISH_BREAKER_S after a failure, ingest does not try: the posts wait in `received`
# for the sweeper exactly as after the failure, and the requests answer at once.
PUBLISH_CIRCUIT = "celery-broker:publish"


def _on_commit_quietly(send: Callable[[], object], *, task_name: str, post_id: int | list[int]) -> None:
    """Run ``send`` (a publish) once the current transaction commits (at once outside one);
    never raises: a broker outage is logged instead of turning a committed write into an error
    response. Not tried while PUBLISH_CIRCUIT is open."""

    def publish() -> None:
        if redis_breaker.circuit_open(PUBLISH_CIRCUIT):
            logger.warning(
                "scoring.score_enqueue_skipped task=%s post_id=%s (broker failed recently)", task_name, post_id
            )
            return
        try:
            send()
        except Exception:
            redis_breaker.trip(PUBLISH_CIRCUIT, seconds=settings.BROKER_PUBLISH_BREAKER_S)
            logger.warning("scoring.score_enqueue_failed task=%s post_id=%s", task_name, post_id, exc_info=True)

    transaction.on_commit(publish)


def on_posts_stored(sender: Any, *, post_ids: Sequence[int], batch: bool = False, **kwargs: Any) -> None:
    if batch:
        size = max(1, settings.SCORING_BATCH_SIZE)
        for start in range(0, len(post_ids), size):
            chunk = list(post_ids[start : start + size])
            _on_commit_quietly(functools.partial(publish_batch, chunk), task_name="score_batch", post_id=chunk)
        return
    check = inline.prepublish_pending()
    for post_id in post_ids:
        if check is None:
            _on_commit_quietly(score_kick, task_name="kick", post_id=post_id)
        elif inline_hold(post_id=post_id, budget_ms=check.budget_ms):
            check.held.add(post_id)  # the check owns it now: no task
        else:  # not held (Redis down): the post's own task, and the check claims like a worker
            _on_commit_quietly(functools.partial(publish_batch, [post_id]), task_name="score_batch", post_id=[post_id])


def on_post_reported(sender: Any, *, post: Post, **kwargs: Any) -> None:
    if post.status == PostStatus.RECEIVED:
        # after_report: the task must read the post even when a batch marked it scored.
        _on_commit_quietly(
            lambda: publish_batch([post.pk], after_report=True), task_name="score_batch", post_id=[post.pk]
        )
    else:
        _on_commit_quietly(lambda: tasks.rescore_post.delay(post.pk), task_name="rescore_post", post_id=post.pk)
