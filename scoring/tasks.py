"""Celery tasks of the scoring pipeline: thin wrappers that take ids and call one service.

One task scores posts: scoring.score_batch, defined beside its service and publishers in
scoring.services.batching (the service publishes it too) and exported here. Ingest's receivers
(scoring.receivers) publish it per batch-ingest chunk (its post ids) or as a kick (no ids: the
oldest waiting posts); an inline check that did not decide, a new report and the sweeper publish
it for one post. The work queue it leases from, with its Redis keys and the state diagram of a
post, is scoring/workqueue.py. rescore_post re-scores a scored post after a new report;
rescore_waiting (scoring.services.queue_rescore) re-scores the posts waiting for a moderator
after a promotion or rollback changed the served models; the webhook task is
scoring.services.webhooks.deliver_webhook.

Retry policy (scoring.services.batching.RETRY_OPTIONS): Triton being down (TritonUnavailable)
or the database dropping a connection (OperationalError, InterfaceError) retries with
exponential backoff capped at SCORING_RETRY_BACKOFF_MAX seconds (60 by default) and jitter, up
to SCORING_MAX_RETRIES (200, i.e. more than three hours at the cap): an outage of minutes loses
nothing, and the sweeper re-enqueues whatever is still in `received` after that. A given post
that another worker is scoring (PostClaimed) retries the same way. All tasks here are
idempotent, so all use acks_late (a worker killed mid-task leaves the message to be
redelivered).

Worker shape (scripts/run_local.py runs it): `celery -A config worker --concurrency=2
--prefetch-multiplier=4 -O fair` and SCORING_BATCH_SIZE=64.
- A batch shares its per-batch costs (a few queries, one Triton round trip, one transaction)
  across its posts, and is only as big as the posts waiting, so at low load nothing waits for
  a batch to fill.
- One message per batch-ingest chunk and, for posts ingested one per request, one kick while
  none is pending, not one per post: a message costs the worker more CPU than scoring a post in
  a batch (benchmarks/task_overhead.py).
- Two prefork processes: one slow batch no longer stalls scoring; more add contention while
  Triton and PostgreSQL are the bottleneck. Prefetch 4 keeps the next messages local without
  hoarding; -O fair gives a message to a process only when it is free.
The drain rate per batch size and concurrency is measured by
`benchmarks/e2e_pipeline.py --mode backlog` and end to end by benchmarks/e2e_load.py
(benchmarks/RESULTS.md).
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from scoring import sweeper
from scoring.services import approval_levels, retention, scoring
from scoring.services.batching import RETRY_OPTIONS, publish_batch, score_batch_task
from scoring.services.policy import policy_active
from scoring.services.queue_rescore import rescore_waiting_task
from scoring.services.removal_statements import record_removal_statements
from scoring.services.webhooks import deliver_webhook

logger = logging.getLogger(__name__)

__all__ = [
    "apply_retention",
    "deliver_webhook",
    "record_removal_statements",
    "rescore_post",
    "rescore_waiting",
    "score_batch",
    "sweep_stuck_posts",
]

score_batch = score_batch_task
rescore_waiting = rescore_waiting_task


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
    # The queries are scoring.sweeper's; each post found gets a score_batch of its own.
    post_ids = sweeper.posts_to_sweep(older_than_s=older_than_s)
    for post_id in post_ids:
        publish_batch([post_id])
    delivery_ids = sweeper.stuck_webhook_ids(older_than_s=older_than_s)
    for delivery_id in delivery_ids:
        deliver_webhook.delay(delivery_id)
    if post_ids or delivery_ids:
        logger.warning("scoring.sweep_requeued posts=%s webhooks=%s", len(post_ids), len(delivery_ids))
    return len(post_ids)


@shared_task(name="scoring.apply_retention", acks_late=True, soft_time_limit=1800, time_limit=1860)
def apply_retention() -> dict[str, dict[str, int]]:
    # Batched: a run cut short by its time limit leaves whole batches done, and the next run
    # (hourly, CELERY_BEAT_SCHEDULE) carries on.
    return retention.retention_apply(now=timezone.now())


@shared_task(name="scoring.update_approval_levels", acks_late=True, soft_time_limit=120, time_limit=150)
def update_approval_levels() -> dict[int, float]:
    # Every EARNED_APPROVAL_INTERVAL_S (CELERY_BEAT_SCHEDULE): one aggregate query per source above
    # level 0 (its spot checks) and one per source below level 1 (its held posts' labels).
    if not settings.EARNED_APPROVAL:
        return {}
    return approval_levels.update_approval_levels(policy=policy_active(), now=timezone.now())
