"""Retention of a source's data: posts and reports older than the source's periods are deleted.

Each source sets its own periods (Source.retention_days_*; scores and webhook deliveries are the
scoring room's, scoring.services.retention; labelled examples the feedback room's,
feedback.services.retention). A post goes with what hangs off it (its scores, reports,
decisions, appeals, moderators' notes and webhook deliveries cascade). Never deleted, whatever their age: posts
still waiting for scoring or a moderator (received, queued) and posts with an appeal waiting
for review, so no accepted post or open case is lost. Authors (with the notes on them), links
and IP addresses stay: they carry the reputation counters, and erasure
(moderation.services.erasure) is the way to remove an author and every note about them.

Deletes go in batches (core.batches), and every run selects by age again, so a second run
deletes nothing more and an interrupted one is finished by the next."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Exists, OuterRef

from core.batches import delete_in_batches
from moderation.models import PENDING_STATUSES, Appeal, AppealStatus, Post, Report, Source

BATCH_SIZE = 1000


@dataclass(frozen=True)
class RetentionCutoffs:
    """Rows created before these instants are past retention."""

    posts: datetime
    scores: datetime
    reports: datetime
    webhook_logs: datetime


def retention_cutoffs(source: Source, now: datetime) -> RetentionCutoffs:
    return RetentionCutoffs(
        posts=now - timedelta(days=source.retention_days_posts),
        scores=now - timedelta(days=source.retention_days_scores),
        reports=now - timedelta(days=source.retention_days_reports),
        webhook_logs=now - timedelta(days=source.retention_days_webhook_logs),
    )


def posts_expire(*, source: Source, now: datetime, batch_size: int = BATCH_SIZE) -> int:
    """Delete the source's posts past retention (see the module docstring). Returns how many."""
    open_appeal = Appeal.objects.filter(post_id=OuterRef("pk"), status=AppealStatus.PENDING)
    # By received_at, this platform's clock: created_at is whatever the source sent.
    expired = (
        Post.objects.filter(source=source, received_at__lt=retention_cutoffs(source, now).posts)
        .exclude(status__in=PENDING_STATUSES)
        .exclude(Exists(open_appeal))
    )
    return delete_in_batches(expired, batch_size=batch_size)


def reports_expire(*, source: Source, now: datetime, batch_size: int = BATCH_SIZE) -> int:
    """Delete the reports on the source's posts made before its report period."""
    expired = Report.objects.filter(post__source=source, created_at__lt=retention_cutoffs(source, now).reports)
    return delete_in_batches(expired, batch_size=batch_size)
