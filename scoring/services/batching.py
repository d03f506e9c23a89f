"""Micro-batching for the score_post task, and the sweeper.

Each accepted post enqueues one score_post(post_id) task. The task claims its own post plus up
to SCORING_BATCH_SIZE-1 other posts still waiting in `received` (oldest first) and scores them
in one Triton call and one write transaction; the other posts' own tasks then find them scored
and return at once. A claim is a Redis key (cache.add = SET NX with a TTL), so two workers never
score the same post concurrently, and a claim held by a killed worker expires by itself.

Why this shape: under load the queue holds many posts, so batches fill up and the per-batch
costs (a few queries, one Triton round trip) are shared; when idle, a batch is just the one post
and nothing waits for a batch to fill. A slow or broken post cannot hold a batch hostage: the
Triton call has a timeout, and a batch the server rejects is re-scored post by post."""

from __future__ import annotations

import logging
import time
import uuid
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import InterfaceError, OperationalError
from django.utils import timezone

from moderation.models import Post, PostStatus
from scoring.models import WebhookDelivery
from scoring.services.claims import claim_post, claim_posts, release_posts
from scoring.services.inference import ScoringClient, TritonUnavailable
from scoring.services.scoring import RESCORE_FROM, ScoreResult, rescore_post, score_posts

logger = logging.getLogger(__name__)


POISON_PREFIX = "scoring:poison:"
SWEPT_PREFIX = "scoring:swept:"
RETRYABLE_ERRORS = (TritonUnavailable, OperationalError, InterfaceError)


class PostClaimed(Exception):
    """Another worker holds this post's claim; retry after it finishes or its claim expires."""


def _candidates(post_id: int, limit: int) -> list[int]:
    if limit <= 0:
        return []
    # post_received_idx: a partial index on received_at WHERE status = 'received'.
    ids = list(
        Post.objects.filter(status=PostStatus.RECEIVED)
        .exclude(id=post_id)
        .order_by("received_at")
        .values_list("id", flat=True)[: limit * 2]
    )
    poisoned = cache.get_many([f"{POISON_PREFIX}{i}" for i in ids]) if ids else {}
    return [i for i in ids if f"{POISON_PREFIX}{i}" not in poisoned]


def score_post_batch(
    *, post_id: int, batch_size: int | None = None, client: ScoringClient | None = None
) -> list[ScoreResult]:
    """Score `post_id` together with other waiting posts. Raises PostClaimed when another
    worker is scoring `post_id` right now (the task retries)."""
    started = time.perf_counter()
    size = settings.SCORING_BATCH_SIZE if batch_size is None else batch_size
    token = uuid.uuid4().hex
    row = Post.objects.filter(id=post_id).values("status", "report_count").first()
    if row is None:
        return [ScoreResult(post_id=post_id, status="", skipped="gone")]
    if row["status"] != PostStatus.RECEIVED and not (row["status"] in RESCORE_FROM and row["report_count"] > 0):
        # Scored already (by an earlier batch or the inline check) and nothing to bring up to
        # date: the common case of a task whose post another batch took. No claim needed.
        return [ScoreResult(post_id=post_id, status=row["status"], skipped="not_pending")]
    if not claim_post(post_id, token):
        if row["status"] == PostStatus.RECEIVED:
            raise PostClaimed(f"post {post_id} is being scored by another worker")
        return [ScoreResult(post_id=post_id, status=row["status"], skipped="not_pending")]
    claimed = [post_id]
    try:
        if row["status"] != PostStatus.RECEIVED:
            # Already scored: the enqueue came from a new report (ingest's report service
            # enqueues score_post), so bring the score up to date. A post without reports
            # costs nothing more; rescore_post is a no-op when no report is new.
            if row["status"] in RESCORE_FROM and row["report_count"] > 0:
                return [rescore_post(post_id=post_id, client=client)]
            return [ScoreResult(post_id=post_id, status=row["status"], skipped="not_pending")]
        # Claims in one round trip (two when other workers hold some of the first candidates:
        # _candidates returns twice the posts needed for that).
        candidates = _candidates(post_id, size - 1)
        claimed += claim_posts(candidates[: size - 1], token)
        if len(claimed) < size and len(candidates) > size - 1:
            claimed += claim_posts(candidates[size - 1 :][: size - len(claimed)], token)
        try:
            return score_posts(post_ids=claimed, client=client, started=started)
        except RETRYABLE_ERRORS:
            raise
        except Exception:
            if len(claimed) == 1:
                # This post fails on its own: keep it out of other batches for a while.
                cache.set(f"{POISON_PREFIX}{post_id}", 1, timeout=settings.SCORING_POISON_TTL_S)
                raise
            # One bad post must not block the batch: score this task's own post alone; the
            # other posts' own tasks do the same for theirs.
            logger.exception("scoring.batch_failed post_id=%s size=%s; scoring it alone", post_id, len(claimed))
            release_posts(claimed[1:])
            del claimed[1:]
            return _score_alone(post_id=post_id, client=client, started=started)
    finally:
        release_posts(claimed)


def _score_alone(*, post_id: int, client: ScoringClient | None, started: float) -> list[ScoreResult]:
    try:
        return score_posts(post_ids=[post_id], client=client, started=started)
    except RETRYABLE_ERRORS:
        raise
    except Exception:
        cache.set(f"{POISON_PREFIX}{post_id}", 1, timeout=settings.SCORING_POISON_TTL_S)
        raise


def posts_to_requeue(*, older_than_s: float | None = None) -> list[int]:
    """Stuck posts not re-enqueued recently: during a long Triton outage the sweeper would
    otherwise add one more (retrying) message per stuck post every minute."""
    ids = stuck_post_ids(older_than_s=older_than_s)
    return [i for i in ids if cache.add(f"{SWEPT_PREFIX}{i}", 1, timeout=settings.SCORING_SWEEP_REQUEUE_TTL_S)]


def stuck_post_ids(*, older_than_s: float | None = None, limit: int = 5000) -> list[int]:
    """Posts still in `received` after the threshold: their task was lost (broker down at
    ingest, a worker killed past the broker's redelivery) or is still retrying."""
    threshold = settings.SCORING_SWEEP_AFTER_S if older_than_s is None else older_than_s
    cutoff = timezone.now() - timedelta(seconds=threshold)
    return list(
        Post.objects.filter(status=PostStatus.RECEIVED, received_at__lt=cutoff)
        .order_by("received_at")
        .values_list("id", flat=True)[:limit]
    )


def stuck_webhook_ids(*, older_than_s: float | None = None, limit: int = 1000) -> list[int]:
    """Deliveries never attempted long after they were written: their enqueue was lost."""
    threshold = 3 * (settings.SCORING_SWEEP_AFTER_S if older_than_s is None else older_than_s)
    cutoff = timezone.now() - timedelta(seconds=threshold)
    return list(
        WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING, attempts=0, created_at__lt=cutoff)
        .order_by("created_at")
        .values_list("id", flat=True)[:limit]
    )
