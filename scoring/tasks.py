"""Celery tasks of the scoring pipeline: thin wrappers that take ids and call one service.

One task scores posts: score_batch (scoring.services.batching). Ingest publishes it per
batch-ingest chunk (its post ids) or as a kick (no ids: the oldest waiting posts,
scoring.workqueue); an inline check that did not decide, a new report and the sweeper publish it
for one post. The work queue it leases from, with its Redis keys and the state diagram of a
post, is scoring/workqueue.py. rescore_post re-scores a scored post after a new report.

Retry policy: Triton being down (TritonUnavailable) or the database dropping a connection
(OperationalError, InterfaceError) retries with exponential backoff capped at
SCORING_RETRY_BACKOFF_MAX seconds (60 by default) and jitter, up to SCORING_MAX_RETRIES (200,
i.e. more than three hours at the cap): an outage of minutes loses nothing, and the sweeper
re-enqueues whatever is still in `received` after that. A given post that another worker is
scoring (PostClaimed) retries the same way. All tasks here are idempotent, so all use acks_late
(a worker killed mid-task leaves the message to be redelivered).

Worker settings chosen for this 2-core machine (scripts/run_local.py runs the worker):
    celery -A config worker --concurrency=2 --prefetch-multiplier=4 -O fair
Measured with benchmarks/e2e_pipeline.py --mode backlog --posts 300 (drain rate; tiny models;
the machine shared with 7 other engineers, load average ~10):
    batch 16: concurrency 1 -> 37.8, 2 -> 37.9, 4 -> 32.5 posts/s
    concurrency 2: batch 1 -> 19.8, batch 16 -> 37.9, batch 32 -> 37.9 posts/s
Re-measured 2026-11-22 with the real models (int8 text model, the bootstrap artifacts), 400 posts,
after the worker kept its database connection across tasks (config.celery_app), two runs each:
    concurrency 2: batch 16 -> 116 / 172, batch 32 -> 191 / 251, batch 64 -> 199 / 274 posts/s
    worker CPU per post: 5.0 / 4.7 ms, 4.6 / 3.4 ms, 4.5 / 3.1 ms (Triton: 2.9, 2.4, 2.3 ms)
- Micro-batching (SCORING_BATCH_SIZE=64): score_batch claims its posts plus other waiting posts
  up to the batch size and scores them in one Triton round (the client sends spam_pipeline
  requests of at most 32) and one write transaction (a fixed number of queries,
  tests/scoring/test_pipeline_batching.py). 32 over 16: +45 % posts/s draining a backlog. 64
  over 32 (end to end with batch ingest of 64 posts per request): the web, worker and
  PostgreSQL CPU per post fell from 0.30 / 0.39 / 0.40 to 0.20 / 0.32 / 0.30 ms, the end-to-end
  rate from 64-67 % to 71-74 % of the model alone, and p95 ingest-to-scored at half that rate
  stayed at 123 ms. A batch is only as big as the posts waiting, so at low load nothing waits
  for a batch to fill.
- Two prefork processes: as fast as one (Triton and PostgreSQL are the bottleneck on 2 cores)
  but one slow batch no longer stalls scoring; four add contention (-14%).
- Prefetch 4 x 2 processes keeps the next messages local without hoarding.
- Messages: one per batch-ingest chunk and, for posts ingested one per request, one kick while
  none is pending, not one per post: a message costs the worker 2.2-3.4 ms of CPU whatever it
  carries (benchmarks/task_overhead.py).
- -O fair (Celery's default for prefork) gives a message to a process only when it is free,
  so one slow batch does not hold messages the other process could run.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from moderation.services.statements import statements_for_automatic_removals
from scoring import workqueue
from scoring.services import batching, scoring, webhooks
from scoring.services.inference import TritonUnavailable

logger = logging.getLogger(__name__)

RETRYABLE = (TritonUnavailable, OperationalError, InterfaceError, batching.PostClaimed, scoring.RescoreConflict)
RETRY_OPTIONS = {
    "autoretry_for": RETRYABLE,
    "retry_backoff": settings.SCORING_RETRY_BACKOFF_S,
    "retry_backoff_max": settings.SCORING_RETRY_BACKOFF_MAX,
    "retry_jitter": True,
    "max_retries": settings.SCORING_MAX_RETRIES,
    "acks_late": True,
    "soft_time_limit": settings.SCORING_TASK_SOFT_TIME_LIMIT_S,
    "time_limit": settings.SCORING_TASK_TIME_LIMIT_S,
}


@shared_task(name="scoring.score_batch", **RETRY_OPTIONS)
def score_batch(post_ids: list[int] | None = None, after_report: bool = False) -> None:
    """Score a batch (scoring.services.batching): `post_ids` (a batch-ingest chunk, or one post:
    an inline check that did not decide, a new report with `after_report`, the sweeper) with
    other waiting posts up to SCORING_BATCH_SIZE; with no ids (a kick), the oldest waiting posts."""
    batching.score_batch(post_ids=post_ids, after_report=after_report)


# The three scoring tasks of the previous version, kept by name: a worker discards a message
# whose task name it does not know, and messages may be queued under these names at upgrade.


@shared_task(name="scoring.score_post", **RETRY_OPTIONS)
def score_post(post_id: int, after_report: bool = False) -> None:
    """Deprecated alias of score_batch: exists only to drain messages queued by the previous
    version; may be removed in the next release."""
    score_batch(post_ids=[post_id], after_report=after_report)


@shared_task(name="scoring.score_posts", **RETRY_OPTIONS)
def score_posts(post_ids: list[int]) -> None:
    """Deprecated alias of score_batch: exists only to drain messages queued by the previous
    version; may be removed in the next release."""
    score_batch(post_ids=post_ids)


@shared_task(name="scoring.score_waiting", **RETRY_OPTIONS)
def score_waiting() -> None:
    """Deprecated alias of score_batch (a kick): exists only to drain messages queued by the
    previous version; may be removed in the next release."""
    score_batch()


@shared_task(name="scoring.rescore_post", **RETRY_OPTIONS)
def rescore_post(post_id: int) -> None:
    scoring.rescore_post(post_id=post_id)


@shared_task(name="scoring.sweep_stuck_posts", acks_late=True, soft_time_limit=50, time_limit=60)
def sweep_stuck_posts(older_than_s: float | None = None) -> int:
    # Posts whose inline check died with its web process first (their hold has expired and
    # no task exists), then posts still unscored after SCORING_SWEEP_AFTER_S.
    post_ids = list(dict.fromkeys([*workqueue.overdue_holds(), *workqueue.posts_to_requeue(older_than_s=older_than_s)]))
    for post_id in post_ids:
        workqueue.publish_batch([post_id])
    delivery_ids = batching.stuck_webhook_ids(older_than_s=older_than_s)
    for delivery_id in delivery_ids:
        deliver_webhook.delay(delivery_id)
    if post_ids or delivery_ids:
        logger.warning("scoring.sweep_requeued posts=%s webhooks=%s", len(post_ids), len(delivery_ids))
    return len(post_ids)


@shared_task(
    name="scoring.deliver_webhook",
    autoretry_for=(webhooks.WebhookDeliveryFailed, OperationalError, InterfaceError),
    retry_backoff=settings.SCORING_RETRY_BACKOFF_S,
    retry_backoff_max=settings.WEBHOOK_RETRY_BACKOFF_MAX,
    retry_jitter=True,
    max_retries=settings.WEBHOOK_MAX_ATTEMPTS,
    acks_late=True,
    soft_time_limit=30,
    time_limit=40,
)
def deliver_webhook(delivery_id: int) -> None:
    webhooks.webhook_deliver(delivery_id=delivery_id)


@shared_task(
    name="scoring.record_removal_statements",
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=settings.SCORING_RETRY_BACKOFF_S,
    max_retries=10,
    acks_late=True,
    soft_time_limit=30,
    time_limit=40,
)
def record_removal_statements(post_ids: list[int]) -> int:
    """Statements of reasons of the posts a batch removed automatically: written after the
    batch commits, so the scoring transaction does not grow by a statement and an event per
    removal. Idempotent (statements_for_automatic_removals skips posts that have one)."""
    return len(statements_for_automatic_removals(post_ids=post_ids))
