"""Per-post claims in Redis: whoever holds a post's claim (a worker's batch, the inline check)
is the only one calling the model for it. cache.add is SET NX with a TTL, so a claim held by a
killed process expires by itself (SCORING_CLAIM_TTL_S, longer than a task's hard time limit).

A claim's value is its holder's token, and releasing compares it before deleting (a Lua
script): a claim that expired under a slow holder and was taken by another worker stays with
the new holder. The release also writes "done" markers for the posts the batch scored (SETEX,
SCORING_DONE_TTL_S), in the same round trip, so the other tasks of those posts return without
a database query (post_done_many); the database stays the truth when a marker is missing.

A batch's claims, and its release with its done markers, are one Lua script each (EVALSHA):
one command of 32 keys instead of a pipeline of 32 commands. redis-py builds every command of
a pipeline in Python, and the three round trips of a batch were ~15 % of the scoring worker's
Python time (cProfile of score_posts_batch, benchmarks/RESULTS.md).

Every key carries the database's identity (its PostgreSQL OID, read once per process): post ids
restart in a database that is re-created or restored under the same Redis, and a marker left
by the old one would otherwise make a new post with the same id look scored until it expired."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from django.conf import settings
from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache
from django.db import connection
from redis.exceptions import NoScriptError

CLAIM_PREFIX = "scoring:claim:"
DONE_PREFIX = "scoring:done:"
# Sorted set of posts held for an inline check (member: post id, score: when the hold is over).
# The check removes its post when it ends; a post still listed after its time belongs to a web
# process that died mid-check, and the sweeper enqueues it (scoring.services.inline).
INLINE_PENDING_KEY = "scoring:inline:pending"


@functools.cache
def database_namespace() -> str:
    """This database's identity for Redis keys: its OID (a re-created or restored database
    gets a new one), or its name outside PostgreSQL."""
    if connection.vendor != "postgresql":
        return str(connection.settings_dict["NAME"])
    with connection.cursor() as cursor:
        cursor.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
        row = cursor.fetchone()
    return str(row[0])


def claim_key(post_id: int) -> str:
    return f"{CLAIM_PREFIX}{database_namespace()}:{post_id}"


def done_key(post_id: int) -> str:
    return f"{DONE_PREFIX}{database_namespace()}:{post_id}"


def pending_key() -> str:
    return f"{INLINE_PENDING_KEY}:{database_namespace()}"


# SET NX EX each KEYS[i] to ARGV[1] for ARGV[2] seconds; the (1-based) indexes of those set.
CLAIM_SCRIPT = """
local claimed = {}
for i, key in ipairs(KEYS) do
    if redis.call('SET', key, ARGV[1], 'NX', 'EX', ARGV[2]) then
        claimed[#claimed + 1] = i
    end
end
return claimed
"""

# KEYS: ARGV[2] claim keys, then ARGV[3] done keys, then optionally the inline pending key.
# Delete each claim only while it still holds ARGV[1] (the releasing holder's token); set each
# done key to ARGV[4] for ARGV[5] seconds; remove ARGV[6:] from the pending set. Returns the
# number of claims released.
RELEASE_SCRIPT = """
local claims, dones = tonumber(ARGV[2]), tonumber(ARGV[3])
local released = 0
for i = 1, claims do
    if redis.call('GET', KEYS[i]) == ARGV[1] then
        redis.call('DEL', KEYS[i])
        released = released + 1
    end
end
for i = claims + 1, claims + dones do
    redis.call('SET', KEYS[i], ARGV[4], 'EX', ARGV[5])
end
if #KEYS > claims + dones and #ARGV > 5 then
    redis.call('ZREM', KEYS[claims + dones + 1], unpack(ARGV, 6))
end
return released
"""


@functools.cache
def _sha(script: str) -> str:
    return hashlib.sha1(script.encode()).hexdigest()  # noqa: S324 - Redis names scripts by SHA-1


def _run_script(client: Any, script: str, keys: Sequence[Any], args: Sequence[Any]) -> Any:
    """EVALSHA, and EVAL (which also caches the script) when the server does not know it yet
    (a restarted or flushed Redis)."""
    try:
        return client.evalsha(_sha(script), len(keys), *keys, *args)
    except NoScriptError:
        return client.eval(script, len(keys), *keys, *args)


def claim_post(post_id: int, token: str) -> bool:
    return claim_post_for(post_id, token, ttl_s=settings.SCORING_CLAIM_TTL_S)


def claim_post_for(post_id: int, token: str, *, ttl_s: int) -> bool:
    return bool(cache.add(claim_key(post_id), token, timeout=ttl_s))


def _redis() -> tuple[RedisCache, Any] | None:
    # Callers build their keys with backend.make_key, without the per-character validation of
    # make_and_validate_key: the keys are this module's own short ASCII strings, and checking
    # ~100 of them a batch was 2 % of the scoring worker's CPU (py-spy).
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
    keys = [backend.make_key(claim_key(i)) for i in post_ids]
    client = inner.get_client(keys[0], write=True)
    claimed = _run_script(client, CLAIM_SCRIPT, keys, [inner._serializer.dumps(token), ttl])
    return [post_ids[int(i) - 1] for i in claimed]


def hold_for_inline(post_id: int, token: str, *, ttl_s: int, until: float) -> bool:
    """Claim a post for an inline check and list it as pending until `until` (Unix time), in
    one round trip; True when the claim was taken."""
    redis = _redis()
    if redis is None:  # not used in this project's settings: the claim alone
        return claim_post_for(post_id, token, ttl_s=ttl_s)
    backend, inner = redis
    key = backend.make_key(claim_key(post_id))
    pipe = inner.get_client(key, write=True).pipeline(transaction=False)
    pipe.set(key, inner._serializer.dumps(token), nx=True, ex=ttl_s)
    pipe.zadd(backend.make_key(pending_key()), {str(post_id): until})
    return bool(pipe.execute()[0])


# Members of KEYS[1] scored at most ARGV[1], removed and returned (atomic: two sweepers never
# both get a post).
POP_DUE_SCRIPT = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #due > 0 then
    redis.call('ZREM', KEYS[1], unpack(due))
end
return due
"""


def pop_overdue_inline(now: float, *, limit: int = 1000) -> list[int]:
    """The posts whose inline hold ended before `now` without the check removing them (its
    web process died mid-check), taken off the pending list."""
    redis = _redis()
    if redis is None:
        return []
    backend, inner = redis
    key = backend.make_key(pending_key())
    due = inner.get_client(key, write=True).eval(POP_DUE_SCRIPT, 1, key, now, limit)
    return [int(member) for member in due]


def release_posts(
    post_ids: Iterable[int], token: str, *, done: Iterable[int] = (), inline_over: Iterable[int] = ()
) -> int:
    """Release the claims `token` holds on `post_ids` (compare-and-delete: a claim now held by
    someone else is left alone), mark `done` posts scored and take `inline_over` off the
    inline pending list, in one round trip. Returns the number of claims released."""
    ids = list(post_ids)
    done_ids = list(done)
    over_ids = [str(i) for i in inline_over]
    if not ids and not done_ids and not over_ids:
        return 0
    ttl = settings.SCORING_DONE_TTL_S
    redis = _redis()
    if redis is None:  # not used in this project's settings; same semantics, not atomic
        released = 0
        for i in ids:
            if cache.get(claim_key(i)) == token:
                cache.delete(claim_key(i))
                released += 1
        cache.set_many({done_key(i): 1 for i in done_ids}, timeout=ttl)
        return released
    backend, inner = redis
    keys = [backend.make_key(claim_key(i)) for i in ids]
    keys += [backend.make_key(done_key(i)) for i in done_ids]
    args = [inner._serializer.dumps(token), len(ids), len(done_ids), inner._serializer.dumps(1), ttl]
    if over_ids:
        keys.append(backend.make_key(pending_key()))
        args += over_ids
    return int(_run_script(inner.get_client(keys[0], write=True), RELEASE_SCRIPT, keys, args))


def posts_done(post_ids: Sequence[int]) -> set[int]:
    """The posts a batch marked scored recently (one MGET); a missing marker proves nothing."""
    if not post_ids:
        return set()
    redis = _redis()
    if redis is None:
        keys = {i: done_key(i) for i in post_ids}
        found = cache.get_many(list(keys.values()))
        return {i for i, key in keys.items() if key in found}
    backend, inner = redis
    marker_keys = [backend.make_key(done_key(i)) for i in post_ids]
    values = inner.get_client(marker_keys[0]).mget(marker_keys)
    return {i for i, value in zip(post_ids, values, strict=True) if value is not None}
