"""The sweeper's queries, all in one place: what scoring.tasks.sweep_stuck_posts (beat, every
minute) re-enqueues. Posts whose inline check died with its web process (their hold expired,
no task exists), posts still in `received` after SCORING_SWEEP_AFTER_S, and webhook deliveries
whose enqueue was lost. The Redis keys it reads and sets are scoring.workqueue's."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from moderation.models import Post, PostStatus
from scoring.models import WebhookDelivery
from scoring.workqueue import SWEPT_PREFIX, database_namespace, overdue_holds


def posts_to_requeue(*, older_than_s: float | None = None) -> list[int]:
    """Stuck posts not re-enqueued recently: during a long Triton outage the sweeper would
    otherwise add one more (retrying) message per stuck post every minute."""
    ids = stuck_post_ids(older_than_s=older_than_s)
    return [
        i
        for i in ids
        if cache.add(f"{SWEPT_PREFIX}{database_namespace()}:{i}", 1, timeout=settings.SCORING_SWEEP_REQUEUE_TTL_S)
    ]


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


def posts_to_sweep(*, older_than_s: float | None = None) -> list[int]:
    """Posts whose inline check died first (their hold expired and no task exists), then posts
    still unscored after the threshold; each once."""
    return list(dict.fromkeys([*overdue_holds(), *posts_to_requeue(older_than_s=older_than_s)]))
