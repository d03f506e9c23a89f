"""The scoring work queue: the one place that owns how a post waiting in `received` gets scored
exactly once, with its Redis keys and invariants. Every path that scores a post uses it: the
one scoring task (scoring.tasks.score_batch, scoring.services.batching), the inline pre-publish
check (scoring.services.inline) and the sweeper (scoring.tasks.sweep_stuck_posts).

- enqueue: publishing the one scoring task (publish_batch), the kick policy (score_kick,
  kick_taken) and publishing a held post's task (publish_post);
- lease: per-post claims (claim_post, claim_posts, claim_waiting, hold_for_inline /
  inline_hold), the batch fill (waiting_posts, fill_candidates) and poison filtering;
- completion: release_posts (compare-and-delete of the claims, done markers, the inline pending
  list, in one round trip) and posts_done.

State of one post (PostgreSQL status, Redis keys):

    ingest --> received ----------------------------------------------------------+
      |  on commit: score_batch(ids) (batch ingest), a kick (score_batch() when   |
      |  scoring:kick is SET NX) or an inline hold (its check publishes           |
      |  score_batch([post]) when it does not decide)                             |
      v                                                                           |
    [claimed] scoring:claim:<db>:<post> = holder token (SET NX EX, TTL)           |
      |        a batch's lease, or the inline hold (also listed in                |
      |        scoring:inline:pending:<db> until the check ends)                  |
      |        a task given a post someone else holds retries (PostClaimed)       |
      +-- scored (one transaction) --> auto_removed | queued | auto_approved      |
      |       release: claim deleted if still ours + scoring:done:<db>:<post>     |
      +-- retryable failure (Triton down, DB dropped) --> release, task retries --+
      +-- fails alone --> scoring:poison:<post> (TTL): left out of batches -------+
      `-- holder killed --> claim expires (TTL) ----------------------------------+
                                                                                  |
    sweeper, every minute: posts in `received` past SCORING_SWEEP_AFTER_S (not   <+
    re-enqueued within scoring:swept:<db>:<post>'s TTL) and inline holds listed
    past their time get a score_batch([post]) task each.

Keys (in the cache's Redis database, under its KEY_PREFIX):

| key | set by | cleared by |
|---|---|---|
| scoring:claim:<db>:<post> | a batch's lease, the inline hold | the holder's release, or TTL (SCORING_CLAIM_TTL_S) |
| scoring:done:<db>:<post> | the release of a batch that scored the post | TTL (SCORING_DONE_TTL_S) |
| scoring:poison:<post> | a post that failed on its own | TTL (SCORING_POISON_TTL_S) |
| scoring:swept:<db>:<post> | the sweeper, when it re-enqueues | TTL (SCORING_SWEEP_REQUEUE_TTL_S) |
| scoring:kick:<host>:<port>/<dbname> | ingest of a single post | the kicked task, before its query; TTL |
| scoring:inline:pending:<db> (sorted set) | the inline hold | the check's release; the sweeper pops overdue |

Invariants
- Only the holder of a post's claim calls the model for it. A claim's value is its holder's
  token and releasing compares it before deleting (a Lua script): a claim that expired under a
  slow holder and was taken by another worker stays with the new holder.
- A post in `received` always has a way out: its task (retried while Triton or the database is
  down), a kick whose task queries after the mark is gone, an inline check that publishes the
  post's task when it does not decide, or the sweeper. Claims, kicks and holds expire, so a
  killed process delays a post, never loses it.
- A done marker is a hint: a task whose post is marked done returns without a query; a missing
  marker proves nothing, the database is the truth. Score rows are unique per post and
  revision and the write locks the posts, so even an expired claim cannot score a post twice.
- Every claim, done and pending key carries the database's identity (its PostgreSQL OID, read
  once per process): post ids restart in a database that is re-created under the same Redis.

So ingest publishes a "kick" (scoring.score_batch with no ids: score the oldest waiting posts)
only when none is pending. The pending mark is a Redis key set NX after the post's commit. The
kicked task deletes the mark BEFORE it queries the waiting posts, which is what makes this
safe: a post whose ingest saw the mark committed before that query runs, so the query sees it;
a post committed later finds no mark and kicks again. When the query finds more posts than a batch
takes, the task kicks the next one before scoring, so a backlog drains on every worker process
without a message per post. A Celery message costs the worker 2.2-3.4 ms of CPU whatever it
carries (benchmarks/task_overhead.py), more than the scoring of a post in a batch.

Cost: a batch's claims, and its release with its done markers, are one Lua script each
(EVALSHA): one command of 32 keys instead of a pipeline of 32 commands; the three round trips
of a batch were ~15 % of the scoring worker's Python time (cProfile of a chunk's batch,
benchmarks/RESULTS.md)."""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import time
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache
from django.db import connection
from django.utils import timezone
from redis.exceptions import NoScriptError

from core.tasks import task_named
from moderation.models import Post, PostStatus

logger = logging.getLogger(__name__)

CLAIM_PREFIX = "scoring:claim:"
DONE_PREFIX = "scoring:done:"
# Sorted set of posts held for an inline check (member: post id, score: when the hold is over).
# The check removes its post when it ends; a post still listed after its time belongs to a web
# process that died mid-check, and the sweeper enqueues it (scoring.services.inline).
INLINE_PENDING_KEY = "scoring:inline:pending"
POISON_PREFIX = "scoring:poison:"
SWEPT_PREFIX = "scoring:swept:"
# The hold outlives the budget by this much (whole seconds: a Redis TTL), then frees itself.
INLINE_HOLD_TTL_S = 2


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


# --- enqueue: the one scoring task and the kick policy ------------------------------------------

SCORE_TASK = "scoring.score_batch"


def publish_batch(post_ids: Sequence[int] | None = None, *, after_report: bool = False) -> None:
    """Publish the one scoring task: score_batch(post_ids), or without ids a kick (score_kick
    says when). Raises what the publish raised."""
    task = task_named(SCORE_TASK)
    if post_ids is None:
        task.delay()
    elif after_report:
        task.delay(list(post_ids), after_report=True)
    else:
        task.delay(list(post_ids))


KICK_PREFIX = "scoring:kick:"


def kick_key() -> str:
    """The pending mark of this database. Named from the connection settings, not the
    database's OID (scoring.workqueue): a mark is only ever early or stale by its TTL,
    and this needs no query (tests clear it before each test)."""
    db = connection.settings_dict
    return f"{KICK_PREFIX}{db.get('HOST') or ''}:{db.get('PORT') or ''}/{db['NAME']}"


def score_kick() -> bool:
    """Publish one kick (scoring.score_batch with no ids) unless one is pending. True when
    published.
    Raises what the publish raised (the caller logs it; the mark is taken back so the next
    post kicks at once)."""
    key = kick_key()
    try:
        if not cache.add(key, 1, timeout=settings.SCORING_KICK_TTL_S):
            return False
    except Exception:  # Redis down: no mark, publish (the broker is probably down too)
        logger.warning("scoring.kick_mark_failed", exc_info=True)
    try:
        publish_batch()
    except Exception:
        kick_taken()
        raise
    return True


def kick_taken() -> None:
    """The kicked task is about to query the waiting posts: delete the pending mark first, so
    that any post committed after this point publishes a kick of its own. Never raises (the
    mark then expires by itself)."""
    try:
        cache.delete(kick_key())
    except Exception:
        logger.warning("scoring.kick_clear_failed", exc_info=True)


def kick_quietly() -> None:
    """Kick a batch for posts no task owns any more; never raises (they are then the
    sweeper's)."""
    try:
        score_kick()
    except Exception:
        logger.warning("scoring.kick_failed", exc_info=True)


# --- lease: candidates, poison filtering, inline holds -----------------------------------------


def waiting_posts(*, limit: int, exclude: int | None = None, newest: bool = False) -> tuple[list[int], bool]:
    """Up to twice `limit` posts waiting in `received`, oldest first (twice: other workers may
    hold some), poisoned ones left out; and whether the query hit its limit (more may wait)."""
    if limit <= 0:
        return [], False
    # post_received_idx: a partial index on received_at WHERE status = 'received' (read
    # backwards for the newest).
    waiting = Post.objects.filter(status=PostStatus.RECEIVED)
    if exclude is not None:
        waiting = waiting.exclude(id=exclude)
    order = "-received_at" if newest else "received_at"
    ids = list(waiting.order_by(order).values_list("id", flat=True)[: limit * 2])
    poisoned = cache.get_many([f"{POISON_PREFIX}{i}" for i in ids]) if ids else {}
    return [i for i in ids if f"{POISON_PREFIX}{i}" not in poisoned], len(ids) == limit * 2


def fill_candidates(post_id: int, limit: int) -> list[int]:
    return waiting_posts(limit=limit, exclude=post_id)[0]


def still_received(post_ids: list[int]) -> set[int]:
    """The posts of `post_ids` still in `received`. By primary key alone, the status checked
    here: with `status` in the WHERE clause the planner may pick the received-posts index, whose
    dead entries (every post scored since the last vacuum) it then reads in full (28 ms at
    10,000 posts without statistics)."""
    statuses = Post.objects.filter(id__in=post_ids).values_list("id", "status")
    return {i for i, status in statuses if status == PostStatus.RECEIVED}


def claim_waiting(*, size: int, token: str) -> tuple[list[int], bool]:
    """Claims on up to `size` waiting posts, oldest first; and whether posts this batch could
    not take may still be waiting (then the caller kicks the next task).

    A full batch with more seen (or possibly) waiting: left over. Fewer than a full batch: every
    post seen was tried, and those not claimed are held by other batches (which score them) or
    poisoned (the sweeper's), so nothing is left over, which is also what stops a chain of kicks
    over a head of held posts. A head made only of held or poisoned posts (a killed worker's
    claims until they expire, a run of corrupt posts) must not hold up the posts behind it: the
    newest waiting posts are taken instead."""
    candidates, more = waiting_posts(limit=size)
    claimed = claim_posts(candidates[:size], token)
    tried = min(size, len(candidates))
    if len(claimed) < size and len(candidates) > size:
        refill = candidates[size:][: size - len(claimed)]
        claimed += claim_posts(refill, token)
        tried += len(refill)
    if not claimed and more:
        newest, _ = waiting_posts(limit=size, newest=True)
        claimed = claim_posts(newest[:size], token)
        return claimed, len(claimed) == size
    untried = len(candidates) > tried
    return claimed, untried or (len(claimed) == size and more)


def mark_poisoned(post_id: int) -> None:
    """Keep a post that fails on its own out of other batches for SCORING_POISON_TTL_S (the
    sweeper retries it after that)."""
    cache.set(f"{POISON_PREFIX}{post_id}", 1, timeout=settings.SCORING_POISON_TTL_S)


def inline_hold(*, post_id: int, budget_ms: float) -> bool:
    """Reserve a post being ingested for the caller's inline check; call it in the ingest
    transaction, before the commit. True: held, publish no task (score_inline publishes it
    when the check does not decide). False: the hold failed (Redis down), publish the task as
    usual; the inline check then claims or waits like a worker."""
    ttl_s = math.ceil(max(budget_ms, 0.0) / 1000.0) + INLINE_HOLD_TTL_S
    try:
        return hold_for_inline(post_id, hold_token(post_id), ttl_s=ttl_s, until=time.time() + ttl_s)
    except Exception:  # the claim store is best effort here; ingest must not fail on it
        logger.warning("scoring.inline_hold_failed post_id=%s", post_id, exc_info=True)
        return False


def overdue_holds() -> list[int]:
    """Posts held for an inline check whose web process died before the check ended (their
    hold has expired, no task was published): the sweeper enqueues them."""
    return pop_overdue_inline(time.time())


def publish_post(post_id: int) -> None:
    """The held post's task (score_batch of the one post), now: the check did not decide.
    Never raises: with the broker down the post stays in `received` for the sweeper, as at
    ingest."""
    try:
        publish_batch([post_id])
    except Exception:
        logger.warning("scoring.inline_enqueue_failed post_id=%s", post_id, exc_info=True)


def hold_token(post_id: int) -> str:
    return f"inline-{post_id}"


# --- the sweeper's view ------------------------------------------------------------------------


def posts_to_requeue(*, older_than_s: float | None = None) -> list[int]:
    """Stuck posts not re-enqueued recently: during a long Triton outage the sweeper would
    otherwise add one more (retrying) message per stuck post every minute."""
    ids = stuck_post_ids(older_than_s=older_than_s)
    return [
        i
        for i in ids
        if cache.add(f"{SWEPT_PREFIX}{database_namespace()}:{i}", 1, timeout=settings.SCORING_SWEEP_REQUEUE_TTL_S)
    ]


def stuck_post_ids(*, older_than_s: float | None = None, limit: int = 5000) -> list[int]:
    """Posts still in `received` after the threshold: their task was lost (broker down at
    ingest, a worker killed past the broker's redelivery) or is still retrying."""
    threshold = settings.SCORING_SWEEP_AFTER_S if older_than_s is None else older_than_s
    cutoff = timezone.now() - timedelta(seconds=threshold)
    return list(
        Post.objects.filter(status=PostStatus.RECEIVED, received_at__lt=cutoff)
        .order_by("received_at")
        .values_list("id", flat=True)[:limit]
    )


def post_keys_delete(*, post_ids: Sequence[int]) -> None:
    """Delete every key this module keeps about the posts (claim, done marker, sweep and poison
    marks) and their inline holds: an erased author's posts leave nothing named after them."""
    if not post_ids:
        return
    namespace = database_namespace()
    keys = [claim_key(i) for i in post_ids] + [done_key(i) for i in post_ids]
    keys += [f"{SWEPT_PREFIX}{namespace}:{i}" for i in post_ids] + [f"{POISON_PREFIX}{i}" for i in post_ids]
    cache.delete_many(keys)
    found = _redis()
    if found is not None:
        backend, inner = found
        key = backend.make_key(pending_key())
        inner.get_client(key, write=True).zrem(key, *[str(i) for i in post_ids])
