"""Retention (moderation.services.retention, scoring.services.retention): rows are created now and
the retention is applied at a later `now`, days past each period, against the real database."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from core.batches import delete_in_batches
from moderation.models import Appeal, Decision, Post, PostStatus, Report
from scoring.models import Score, WebhookDelivery
from scoring.services.retention import retention_apply
from scoring.tasks import apply_retention
from tests.factories import AuthorFactory, DecisionFactory, PostFactory, ReportFactory, ScoreFactory, SourceFactory

pytestmark = pytest.mark.django_db
DAY = timedelta(days=1)


def delivery(source, post=None, status=WebhookDelivery.Status.DELIVERED) -> WebhookDelivery:
    return WebhookDelivery.objects.create(
        source=source, post=post, event_id=uuid.uuid4().hex, event_type="post.decided", payload={}, status=status
    )


def test_each_kind_goes_after_its_own_period_and_only_for_its_source():
    source = SourceFactory(
        retention_days_posts=100, retention_days_scores=50, retention_days_reports=20, retention_days_webhook_logs=10
    )
    other = SourceFactory()  # the defaults: 365 days, 30 for webhook logs
    mine = PostFactory(author=AuthorFactory(source=source), status=PostStatus.APPROVED)
    theirs = PostFactory(author=AuthorFactory(source=other), status=PostStatus.APPROVED)
    for post in (mine, theirs):
        ScoreFactory(post=post)
        ReportFactory(post=post)
        DecisionFactory(post=post)
        delivery(post.source, post)
    start = timezone.now()

    def counts(post: Post) -> tuple[int, int, int, int]:
        return (
            Score.objects.filter(post=post).count(),
            Report.objects.filter(post=post).count(),
            WebhookDelivery.objects.filter(post=post).count(),
            Post.objects.filter(pk=post.pk).count(),
        )

    retention_apply(now=start + 9 * DAY)
    assert counts(mine) == (1, 1, 1, 1)
    retention_apply(now=start + 11 * DAY)
    assert counts(mine) == (1, 1, 0, 1)
    retention_apply(now=start + 21 * DAY)
    assert counts(mine) == (1, 0, 0, 1)
    retention_apply(now=start + 51 * DAY)
    assert counts(mine) == (0, 0, 0, 1)
    done = retention_apply(now=start + 101 * DAY)
    assert counts(mine) == (0, 0, 0, 0)
    assert not Decision.objects.filter(post_id=mine.pk).exists()  # went with its post
    assert done[source.slug]["posts"] == 1
    # The other source's webhook log is past its 30 days; the rest is within its 365.
    assert counts(theirs) == (1, 1, 0, 1)


def test_pending_posts_open_appeals_and_undelivered_events_are_kept():
    source = SourceFactory(retention_days_posts=1, retention_days_webhook_logs=1)
    author = AuthorFactory(source=source)
    waiting = [PostFactory(author=author, status=s) for s in (PostStatus.RECEIVED, PostStatus.QUEUED)]
    appealed = PostFactory(author=author, status=PostStatus.REMOVED)
    Appeal.objects.create(source=source, post=appealed, appealed_status=PostStatus.REMOVED)
    resolved = PostFactory(author=author, status=PostStatus.REMOVED)
    Appeal.objects.create(source=source, post=resolved, appealed_status=PostStatus.REMOVED, status="upheld")
    pending = delivery(source, status=WebhookDelivery.Status.PENDING)
    failed = delivery(source, status=WebhookDelivery.Status.FAILED)

    apply_retention.apply()  # the beat task: now is the real clock, a day is not over yet
    assert Post.objects.filter(source=source).count() == 4

    retention_apply(now=timezone.now() + 2 * DAY)

    assert set(Post.objects.filter(source=source)) == {*waiting, appealed}
    assert list(WebhookDelivery.objects.filter(source=source)) == [pending]
    assert not WebhookDelivery.objects.filter(pk=failed.pk).exists()


def test_by_received_at_not_the_date_the_source_sent():
    source = SourceFactory(retention_days_posts=30)
    # A source cannot keep a post forever by sending a date in the future, nor have it
    # deleted early by sending an old one.
    future = PostFactory(
        author=AuthorFactory(source=source), status=PostStatus.APPROVED, created_at=timezone.now() + 3650 * DAY
    )
    old = PostFactory(
        author=AuthorFactory(source=source), status=PostStatus.APPROVED, created_at=timezone.now() - 3650 * DAY
    )
    retention_apply(now=timezone.now() + 10 * DAY)
    assert Post.objects.filter(pk__in=[future.pk, old.pk]).count() == 2
    retention_apply(now=timezone.now() + 31 * DAY)
    assert not Post.objects.filter(pk__in=[future.pk, old.pk]).exists()


def test_batched_and_idempotent():
    source = SourceFactory(retention_days_posts=1)
    author = AuthorFactory(source=source)
    for _ in range(7):
        ScoreFactory(post=PostFactory(author=author, status=PostStatus.AUTO_APPROVED))
    later = timezone.now() + 2 * DAY
    expired = Post.objects.filter(source=source)

    # Bounded: two batches of three, then a run stopped there leaves the rest for the next.
    assert delete_in_batches(expired, batch_size=3, max_batches=2) == 6
    assert expired.count() == 1

    first = retention_apply(now=later, batch_size=3)
    second = retention_apply(now=later, batch_size=3)
    assert first[source.slug]["posts"] == 1
    assert second[source.slug] == {"posts": 0, "reports": 0, "scores": 0, "webhook_deliveries": 0}
    assert not Score.objects.filter(post__source=source).exists()
