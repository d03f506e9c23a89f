"""Per-post claims in Redis: whoever holds a post's claim (a worker's batch, the inline check)
is the only one calling the model for it. cache.add is SET NX with a TTL, so a claim held by a
killed process expires by itself (SCORING_CLAIM_TTL_S, longer than a task's hard time limit).

A claim's value is its holder's token, and releasing compares it before deleting (a Lua
script): a claim that expired under a slow holder and was taken by another worker stays with
the new holder. The release also writes "done" markers for the posts the batch scored (SETEX,
SCORING_DONE_TTL_S), in the same round trip, so the other tasks of those posts return without
a database query (post_done_many); the database stays the truth when a marker is missing."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.conf import settings
from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache

CLAIM_PREFIX = "scoring:claim:"
DONE_PREFIX = "scoring:done:"

# Delete each KEYS[i] only while it still holds ARGV[1] (the releasing holder's token).
RELEASE_SCRIPT = """
local released = 0
for _, key in ipairs(KEYS) do
    if redis.call('GET', key) == ARGV[1] then
        redis.call('DEL', key)
        released = released + 1
    end
end
return released
"""


def claim_post(post_id: int, token: str) -> bool:
    return claim_post_for(post_id, token, ttl_s=settings.SCORING_CLAIM_TTL_S)


def claim_post_for(post_id: int, token: str, *, ttl_s: int) -> bool:
    return bool(cache.add(f"{CLAIM_PREFIX}{post_id}", token, timeout=ttl_s))


def _redis() -> tuple[RedisCache, Any] | None:
    backend = caches["default"]
    if not isinstance(backend, RedisCache):
        return None
    return backend, backend._cache


def claim_posts(post_ids: Sequence[int], token: str) -> list[int]:
    """Claim several posts in one round trip (a pipeline of SET NX EX, what cache.add sends
    for each); returns the ids claimed, in order."""
    if not post_ids:
        return []
    ttl = settings.SCORING_CLAIM_TTL_S
    redis = _redis()
    if redis is None:
        return [i for i in post_ids if claim_post_for(i, token, ttl_s=ttl)]
    backend, inner = redis
    keys = [backend.make_and_validate_key(f"{CLAIM_PREFIX}{i}") for i in post_ids]
    client = inner.get_client(keys[0], write=True)
    value = inner._serializer.dumps(token)
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.set(key, value, nx=True, ex=ttl)
    return [i for i, ok in zip(post_ids, pipe.execute(), strict=True) if ok]


def release_posts(post_ids: Iterable[int], token: str, *, done: Iterable[int] = ()) -> int:
    """Release the claims `token` holds on `post_ids` (compare-and-delete: a claim now held by
    someone else is left alone) and mark `done` posts scored, in one round trip. Returns the
    number of claims released."""
    ids = list(post_ids)
    done_ids = list(done)
    if not ids and not done_ids:
        return 0
    ttl = settings.SCORING_DONE_TTL_S
    redis = _redis()
    if redis is None:  # not used in this project's settings; same semantics, not atomic
        released = 0
        for i in ids:
            if cache.get(f"{CLAIM_PREFIX}{i}") == token:
                cache.delete(f"{CLAIM_PREFIX}{i}")
                released += 1
        cache.set_many({f"{DONE_PREFIX}{i}": 1 for i in done_ids}, timeout=ttl)
        return released
    backend, inner = redis
    keys = [backend.make_and_validate_key(f"{CLAIM_PREFIX}{i}") for i in ids]
    client = inner.get_client(keys[0] if keys else None, write=True)
    pipe = client.pipeline(transaction=False)
    if keys:
        pipe.eval(RELEASE_SCRIPT, len(keys), *keys, inner._serializer.dumps(token))
    for i in done_ids:
        pipe.set(backend.make_and_validate_key(f"{DONE_PREFIX}{i}"), inner._serializer.dumps(1), ex=ttl)
    replies = pipe.execute()
    return int(replies[0]) if keys else 0


def posts_done(post_ids: Sequence[int]) -> set[int]:
    """The posts a batch marked scored recently (one MGET); a missing marker proves nothing."""
    if not post_ids:
        return set()
    found = cache.get_many([f"{DONE_PREFIX}{i}" for i in post_ids])
    return {i for i in post_ids if f"{DONE_PREFIX}{i}" in found}
