"""Links and domains as the platform sees them: one Link row per normalized URL, one Domain row
per registrable domain (public-suffix aware). Normalization is core.urls's, so the
identity of a link is the same for ingest and for the link features."""

from __future__ import annotations

import hashlib

from django.db.models import F

from core.urls import InvalidUrl, url_parts
from moderation.models import Domain, Link

__all__ = ["InvalidUrl", "domain_get_or_create", "link_get_or_create", "link_identity", "url_hash"]


def url_hash(normalized_url: str) -> str:
    return hashlib.sha256(normalized_url.encode()).hexdigest()


def link_identity(url: str) -> tuple[str, str, str]:
    """(normalized URL, host, registrable domain) of ``url``; raises InvalidUrl."""
    parts = url_parts(url)
    return parts.normalized, parts.host.strip("[]"), parts.registrable_domain


def domain_get_or_create(*, name: str) -> Domain:
    domain, _ = Domain.objects.get_or_create(name=name)
    return domain


def link_get_or_create(*, url: str, count_post: bool = False) -> Link:
    """The Link (and its Domain) for ``url``, created on first sight; raises InvalidUrl.

    With ``count_post`` the link's and domain's post counters go up by one in SQL (F
    expressions), so concurrent ingests never lose an increment. The ingest service counts
    itself, after inserting the post, to hold those row locks as briefly as possible."""
    normalized, host, domain_name = link_identity(url)
    digest = url_hash(normalized)
    link = Link.objects.select_related("domain").filter(url_hash=digest).first()
    if link is None:
        domain = domain_get_or_create(name=domain_name)
        link, _ = Link.objects.select_related("domain").get_or_create(
            url_hash=digest, defaults={"url": normalized, "host": host, "domain": domain}
        )
    if count_post:
        Link.objects.filter(pk=link.pk).update(post_count=F("post_count") + 1)
        Domain.objects.filter(pk=link.domain_id).update(post_count=F("post_count") + 1)
    return link
