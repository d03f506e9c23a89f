"""Retention, run by the beat task scoring.apply_retention: for every source, the posts and
reports past its periods (moderation.services.retention), then its Score rows and finished
webhook deliveries past theirs. A delivery still pending is kept whatever its age: it is an
event the platform has not received yet. Batched and idempotent like the posts' part."""

from __future__ import annotations

import logging
from datetime import datetime

from core.batches import delete_in_batches
from moderation.models import Source
from moderation.services.retention import BATCH_SIZE, posts_expire, reports_expire, retention_cutoffs
from scoring.models import Score, WebhookDelivery

logger = logging.getLogger(__name__)


def scores_expire(*, source: Source, now: datetime, batch_size: int = BATCH_SIZE) -> int:
    expired = Score.objects.filter(post__source=source, created_at__lt=retention_cutoffs(source, now).scores)
    return delete_in_batches(expired, batch_size=batch_size)


def webhook_deliveries_expire(*, source: Source, now: datetime, batch_size: int = BATCH_SIZE) -> int:
    expired = WebhookDelivery.objects.filter(
        source=source, created_at__lt=retention_cutoffs(source, now).webhook_logs
    ).exclude(status=WebhookDelivery.Status.PENDING)
    return delete_in_batches(expired, batch_size=batch_size)


def retention_apply(*, now: datetime, batch_size: int = BATCH_SIZE) -> dict[str, dict[str, int]]:
    """Apply every source's retention. Returns {source slug: {kind: rows deleted}}."""
    done: dict[str, dict[str, int]] = {}
    for source in Source.objects.order_by("pk"):
        counts = {
            "posts": posts_expire(source=source, now=now, batch_size=batch_size),
            "reports": reports_expire(source=source, now=now, batch_size=batch_size),
            "scores": scores_expire(source=source, now=now, batch_size=batch_size),
            "webhook_deliveries": webhook_deliveries_expire(source=source, now=now, batch_size=batch_size),
        }
        done[source.slug] = counts
        if any(counts.values()):
            logger.info("scoring.retention_applied", extra={"source": source.slug, **counts})
    return done
