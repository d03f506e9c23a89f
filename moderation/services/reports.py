"""Reports: a platform user's complaint about a post. A complaint is a behaviour signal, so a
new report re-scores the post - unless no score could change it any more (auto-removed, or
decided by a moderator): then the report is only recorded and counted."""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from core.errors import NotFound
from moderation.categories import category_for_report_reason
from moderation.models import RESCORABLE_STATUSES, Domain, Link, Post, Report, Source
from moderation.services.priority import posts_report_weight_refresh
from moderation.services.source_stats import source_stats_count_report
from moderation.signals import post_reported

logger = logging.getLogger(__name__)


def report_create(
    *,
    source: Source,
    post_external_id: str,
    reporter_id: str,
    reason: str,
    details: str = "",
    created_at: datetime | None = None,
) -> tuple[Report, bool]:
    """Record a report; idempotent on (post, reporter, reason). Returns (report, created).

    A reporter's first report on the post bumps the post's, link's and domain's report counters
    (another reason from the same reporter is recorded but counts once), re-weighs the
    post's reports for its queue priority and, while a score
    can still change the post's status, announces it (moderation.signals.post_reported: scoring
    re-scores the post after commit)."""
    post = Post.objects.filter(source=source, external_id=post_external_id).select_related("link").first()
    if post is None:
        raise NotFound(
            "No post with this external_id.", code="post_not_found", fields={"post_external_id": ["Unknown post."]}
        )
    existing = Report.objects.filter(post=post, reporter_id=reporter_id, reason=reason).first()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            # The post's row lock orders concurrent reports on it, so "is this reporter new on
            # this post" is answered once per reporter even when two reasons arrive together.
            Post.objects.select_for_update().filter(pk=post.pk).values_list("pk", flat=True).get()
            counted = Report.objects.filter(post=post, reporter_id=reporter_id).exists()
            report = Report.objects.create(
                post=post,
                reporter_id=reporter_id,
                reason=reason,
                category=category_for_report_reason(reason),
                details=details,
                created_at=created_at or timezone.now(),
            )
            if not counted:
                _counters_add(post)
            # The reason's severity and the reporter's record raise the post's queue priority.
            posts_report_weight_refresh(post_ids=[post.pk])
            if post.status in RESCORABLE_STATUSES:
                post_reported.send(sender=Post, post=post)  # scoring re-scores it after commit
            else:
                logger.info("moderation.report_not_rescored post_id=%s status=%s", post.pk, post.status)
    except IntegrityError:
        return Report.objects.get(post=post, reporter_id=reporter_id, reason=reason), False
    report.post.refresh_from_db(fields=["report_count"])
    return report, True


def _counters_add(post: Post) -> None:
    """One more reporter on `post`: its own, its link's and its domain's report counters, and
    its source's counter for the domain (the feature domain_report_count reads that one)."""
    Post.objects.filter(pk=post.pk).update(report_count=F("report_count") + 1)
    if post.link_id is not None and post.link is not None:
        Link.objects.filter(pk=post.link_id).update(report_count=F("report_count") + 1)
        Domain.objects.filter(pk=post.link.domain_id).update(report_count=F("report_count") + 1)
        source_stats_count_report(post=post)
