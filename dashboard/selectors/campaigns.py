"""The campaign page: a campaign's members, authors, domains and decisions, in a fixed number
of queries whatever its size."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.db.models import Count

from core.errors import NotFound
from moderation.models import Campaign, Decision, Post

CAMPAIGN_PAGE_LIMIT = 100


@dataclass
class CampaignPage:
    campaign: Campaign
    posts: list[Post]  # the newest members
    authors: Sequence[Mapping[str, object]]  # {"author_id", "author__external_id", "author__username", "n"}
    domains: Sequence[Mapping[str, object]]  # {"link__domain__name", "n"}
    statuses: Sequence[Mapping[str, object]]  # {"status", "n"}: decisions so far, automatic ones included
    decisions: list[Decision]  # moderators' decisions on members, newest first


def campaign_page(*, campaign_id: int) -> CampaignPage:
    campaign = Campaign.objects.select_related("source", "decided_bulk__moderator").filter(pk=campaign_id).first()
    if campaign is None:
        raise NotFound("No such campaign.")
    members = Post.objects.filter(campaign=campaign)
    posts = list(members.select_related("author", "link__domain").order_by("-received_at")[:CAMPAIGN_PAGE_LIMIT])
    authors = list(
        members.values("author_id", "author__external_id", "author__username")
        .annotate(n=Count("id"))
        .order_by("-n", "author_id")[:CAMPAIGN_PAGE_LIMIT]
    )
    domains = list(
        members.filter(link__isnull=False)
        .values("link__domain__name")
        .annotate(n=Count("id"))
        .order_by("-n", "link__domain__name")[:CAMPAIGN_PAGE_LIMIT]
    )
    statuses = list(members.values("status").annotate(n=Count("id")).order_by("-n", "status"))
    decisions = list(
        Decision.objects.filter(post__campaign=campaign)
        .select_related("moderator")
        .order_by("-created_at", "-pk")[:CAMPAIGN_PAGE_LIMIT]
    )
    return CampaignPage(
        campaign=campaign, posts=posts, authors=authors, domains=domains, statuses=statuses, decisions=decisions
    )
