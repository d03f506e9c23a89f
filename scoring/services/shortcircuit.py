"""Block lists decide before any model runs: a post whose link's domain or IP is blocked is
removed without a model call (docs/design.md, "Block lists decide before any model").

Two scopes decide: the global lists (Domain/IpAddress.status, set by moderators) and the
post's OWN source's blocks (SourceBlock), which scoring.features.extract reads in the same
statement as the features. Another source's blocks never decide a post."""

from __future__ import annotations

from django.utils import timezone

from moderation.enforcement_state import list_status
from moderation.models import ListStatus, Post
from scoring.features.extract import SourceBlockHits

SHORT_CIRCUIT_MODEL_SET = "short_circuit"


def _with_reason(what: str, reason: str) -> str:
    return f"{what}: {reason}" if reason else what


def short_circuit_reason(post: Post, source_blocks: SourceBlockHits) -> str | None:
    """Why the post is removed without a model call, or None. Reads only rows that
    scoring.features.extract already loaded with the post (no query). A global block past its
    expiry no longer applies."""
    now = timezone.now()
    link = post.link
    if link is not None:
        if list_status(link.domain, now=now) == ListStatus.BLOCK:
            return _with_reason(f"blocked domain {link.domain.name}", link.domain.status_reason)
        if source_blocks.domain is not None:
            return _with_reason(f"blocked domain {link.domain.name} (this source's list)", source_blocks.domain)
    if post.ip is not None:
        if list_status(post.ip, now=now) == ListStatus.BLOCK:
            return _with_reason(f"blocked IP {post.ip.address}", post.ip.status_reason)
        if source_blocks.ip is not None:
            return _with_reason(f"blocked IP {post.ip.address} (this source's list)", source_blocks.ip)
    return None
