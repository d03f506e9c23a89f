"""Block lists decide before any model runs: a post whose link's domain or IP is blocked is
removed without a model call (docs/design.md, "Block lists decide before any model").

Two scopes decide: the global lists (Domain/IpAddress.status, set by moderators) and the
post's OWN source's blocks (SourceBlock), which scoring.features.extract reads in the same
statement as the features. Another source's blocks never decide a post.

The reason stored on the Score is returned to the source by the API, so it is written for that
audience: a reason code and a public message, the same whichever list matched. The moderator's
note on a global block is internal (it may name another tenant or a case) and stays on the
staff pages with the Domain/IpAddress row; the address or domain is not repeated either, so the
Score row carries nothing about the author and nothing about which list matched."""

from __future__ import annotations

from django.utils import timezone

from moderation.enforcement_state import list_status
from moderation.models import ListStatus, Post
from scoring.features.extract import SourceBlockHits

SHORT_CIRCUIT_MODEL_SET = "short_circuit"

# code -> the public message a source sees after it.
PUBLIC_REASONS: dict[str, str] = {
    "blocked_domain": "The post links to a domain on a block list.",
    "blocked_ip": "The post was sent from an address on a block list.",
}


def public_reason(code: str) -> str:
    """`code: message`, the form Score.short_circuit_reason stores."""
    return f"{code}: {PUBLIC_REASONS[code]}"


def short_circuit_reason(post: Post, source_blocks: SourceBlockHits) -> str | None:
    """Why the post is removed without a model call (`public_reason`), or None. Reads only rows
    that scoring.features.extract already loaded with the post (no query). A global block past
    its expiry no longer applies."""
    now = timezone.now()
    link = post.link
    if link is not None and (list_status(link.domain, now=now) == ListStatus.BLOCK or source_blocks.domain is not None):
        return public_reason("blocked_domain")
    if post.ip is not None and (list_status(post.ip, now=now) == ListStatus.BLOCK or source_blocks.ip is not None):
        return public_reason("blocked_ip")
    return None
