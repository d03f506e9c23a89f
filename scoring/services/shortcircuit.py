"""Block lists decide before any model runs (blueprint: "a link whose domain is already
banned decides the post at once: stop there")."""

from __future__ import annotations

from moderation.models import ListStatus, Post

SHORT_CIRCUIT_MODEL_SET = "short_circuit"


def short_circuit_reason(post: Post) -> str | None:
    """Why the post is removed without a model call, or None. Reads only rows that
    scoring.features.extract.posts_for_scoring already joined (no query)."""
    link = post.link
    if link is not None and link.domain.status == ListStatus.BLOCK:
        reason = f"blocked domain {link.domain.name}"
        return f"{reason}: {link.domain.status_reason}" if link.domain.status_reason else reason
    if post.ip is not None and post.ip.status == ListStatus.BLOCK:
        reason = f"blocked IP {post.ip.address}"
        return f"{reason}: {post.ip.status_reason}" if post.ip.status_reason else reason
    return None
