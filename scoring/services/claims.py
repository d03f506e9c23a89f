"""Per-post claims in Redis: whoever holds a post's claim (a worker's batch, the inline check)
is the only one calling the model for it. cache.add is SET NX with a TTL, so a claim held by a
killed process expires by itself (SCORING_CLAIM_TTL_S, longer than a task's hard time limit)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.conf import settings
from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache

CLAIM_PREFIX = "scoring:claim:"


def claim_post(post_id: int, token: str) -> bool:
    return claim_post_for(post_id, token, ttl_s=settings.SCORING_CLAIM_TTL_S)


def claim_post_for(post_id: int, token: str, *, ttl_s: int) -> bool:
    return bool(cache.add(f"{CLAIM_PREFIX}{post_id}", token, timeout=ttl_s))


def claim_posts(post_ids: Sequence[int], token: str) -> list[int]:
    """Claim several posts in one round trip (a pipeline of SET NX EX, what cache.add sends
    for each); returns the ids claimed, in order."""
    if not post_ids:
        return []
    ttl = settings.SCORING_CLAIM_TTL_S
    backend = caches["default"]
    if not isinstance(backend, RedisCache):
        return [i for i in post_ids if claim_post_for(i, token, ttl_s=ttl)]
    keys = [backend.make_and_validate_key(f"{CLAIM_PREFIX}{i}") for i in post_ids]
    client = backend._cache.get_client(keys[0], write=True)
    value = backend._cache._serializer.dumps(token)  # type: ignore[attr-defined]
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.set(key, value, nx=True, ex=ttl)
    return [i for i, ok in zip(post_ids, pipe.execute(), strict=True) if ok]


def release_posts(post_ids: Iterable[int]) -> None:
    cache.delete_many([f"{CLAIM_PREFIX}{i}" for i in post_ids])
