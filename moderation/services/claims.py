"""Claim/lock of queue items: a post claimed by one moderator is not served to another by focus
mode until the claim expires (settings.DASHBOARD_CLAIM_MINUTES, default 10).

A claim is taken only on purpose: by focus mode, which serves one post at a time, or by the
post page's Claim button. Reading a post claims nothing. The queue lists claimed posts with
"claimed by X until …" rather than hiding them; a decision or a skip releases the claim."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.dateformat import format as date_format

from moderation.models import Post


def claim_minutes() -> int:
    return int(getattr(settings, "DASHBOARD_CLAIM_MINUTES", 10))


def claimable_q(*, user: Any, now: Any = None) -> Q:
    """Posts this user may take: unclaimed, claimed by this user, or with an expired claim."""
    now = now or timezone.now()
    return Q(claimed_by__isnull=True) | Q(claimed_by=user) | Q(claimed_until__lt=now)


@dataclass(frozen=True, slots=True)
class ClaimState:
    """Who holds a post now, as a page shows it; `mine` when it is the reader."""

    holder: Any
    until: datetime
    mine: bool


def post_claim_state(*, post: Post, user: Any, now: datetime | None = None) -> ClaimState | None:
    """The post's live claim, or None when nobody holds it (never claimed, released, expired)."""
    now = now or timezone.now()
    if post.claimed_by_id is None or post.claimed_until is None or post.claimed_until <= now:
        return None
    return ClaimState(holder=post.claimed_by, until=post.claimed_until, mine=post.claimed_by_id == user.pk)


def claim_until_label(post: Post) -> str:
    """ "14:05 EST": the claim's end in the reader's time zone, with the zone named."""
    if post.claimed_until is None:
        return ""
    return date_format(timezone.localtime(post.claimed_until), "H:i T")


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
