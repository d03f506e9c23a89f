"""Campaign rows: members joining (from the scoring path, which finds them) and a moderator's
decision on a whole campaign (from moderation.services.bulk, which decides the members).

Every write is scoped to one source: a post of another source is never made a member, whatever
ids the caller passes."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db.models import Count, Max, Min

from moderation.models import BulkAction, Campaign, Post


def campaign_members_add(
    *, source_id: int, campaign_id: int | None, post_ids: Sequence[int], now: datetime
) -> Campaign:
    """Add the posts (those of `source_id` in no campaign yet) to the campaign, creating it when
    `campaign_id` is None, and recount its members, authors and first and last seen from the
    member posts, so running it twice leaves the same row. Call inside the caller's transaction
    (scoring.services.campaigns holds the source's campaign lock)."""
    if campaign_id is None:
        campaign = Campaign.objects.create(source_id=source_id, first_seen_at=now, last_seen_at=now)
    else:
        campaign = Campaign.objects.get(pk=campaign_id, source_id=source_id)
    Post.objects.filter(pk__in=list(post_ids), source_id=source_id, campaign__isnull=True).update(campaign=campaign)
    stats = Post.objects.filter(campaign=campaign).aggregate(
        members=Count("id"),
        authors=Count("author_id", distinct=True),
        first=Min("received_at"),
        last=Max("received_at"),
    )
    campaign.member_count = stats["members"]
    campaign.author_count = stats["authors"]
    campaign.first_seen_at = stats["first"] or now
    campaign.last_seen_at = stats["last"] or now
    campaign.save(update_fields=["member_count", "author_count", "first_seen_at", "last_seen_at"])
    return campaign


def campaign_decided_set(*, campaign_id: int, bulk: BulkAction) -> None:
    """Remember the moderator's decision on the campaign: its new members follow it."""
    Campaign.objects.filter(pk=campaign_id).update(
        decided_label=bulk.label, decided_at=bulk.created_at, decided_bulk=bulk
    )


def campaign_decided_clear(*, bulk: BulkAction) -> None:
    """Undoing the bulk action that decided a campaign undoes the campaign's decision too."""
    Campaign.objects.filter(decided_bulk=bulk).update(decided_label="", decided_at=None, decided_bulk=None)
