"""Claim/lock of queue items: a post opened by one moderator is not served to another until
the claim expires (settings.DASHBOARD_CLAIM_MINUTES, default 10)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from moderation.models import Post


def claim_minutes() -> int:
    return int(getattr(settings, "DASHBOARD_CLAIM_MINUTES", 10))


def claimable_q(*, user: Any, now: Any = None) -> Q:
    """Posts this user may take: unclaimed, claimed by this user, or with an expired claim."""
    now = now or timezone.now()
    return Q(claimed_by__isnull=True) | Q(claimed_by=user) | Q(claimed_until__lt=now)


def claim_post(*, post: Post, user: Any) -> bool:
    """Claim (or extend the claim on) the post. False when another moderator holds it."""
    now = timezone.now()
    until = now + timedelta(minutes=claim_minutes())
    updated = (
        Post.objects.filter(pk=post.pk)
        .filter(claimable_q(user=user, now=now))
        .update(claimed_by=user, claimed_until=until)
    )
    if updated:
        post.claimed_by = user
        post.claimed_until = until
        return True
    post.refresh_from_db(fields=["claimed_by", "claimed_until"])
    return False


def claim_release(*, post: Post, user: Any) -> None:
    """Drop the user's own claim (after a decision, or when skipping the item)."""
    Post.objects.filter(pk=post.pk, claimed_by=user).update(claimed_by=None, claimed_until=None)
    if post.claimed_by_id == getattr(user, "pk", None):
        post.claimed_by = None
        post.claimed_until = None


def claim_next(*, user: Any, base_queryset: Any) -> Post | None:
    """Claim the first queue item (in the queryset's order) nobody else holds.

    SKIP LOCKED keeps two moderators pressing "next" at the same moment from getting the same
    item; the conditional update then makes the claim visible to everyone.
    """
    now = timezone.now()
    with transaction.atomic():
        post: Post | None = (
            base_queryset.filter(claimable_q(user=user, now=now))
            .select_for_update(skip_locked=True, of=("self",))
            .first()
        )
        if post is None:
            return None
        post.claimed_by = user
        post.claimed_until = now + timedelta(minutes=claim_minutes())
        post.save(update_fields=["claimed_by", "claimed_until"])
    return post
