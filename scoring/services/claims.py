"""Per-post claims in Redis: whoever holds a post's claim (a worker's batch, the inline check)
is the only one calling the model for it. cache.add is SET NX with a TTL, so a claim held by a
killed process expires by itself (SCORING_CLAIM_TTL_S, longer than a task's hard time limit)."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.core.cache import cache

CLAIM_PREFIX = "scoring:claim:"


def claim_post(post_id: int, token: str) -> bool:
    return claim_post_for(post_id, token, ttl_s=settings.SCORING_CLAIM_TTL_S)


def claim_post_for(post_id: int, token: str, *, ttl_s: int) -> bool:
    return bool(cache.add(f"{CLAIM_PREFIX}{post_id}", token, timeout=ttl_s))


def release_posts(post_ids: Iterable[int]) -> None:
    cache.delete_many([f"{CLAIM_PREFIX}{i}" for i in post_ids])
