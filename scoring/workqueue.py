"""The scoring work queue: the one place that owns how a post waiting in `received` gets scored
exactly once, with its Redis keys and invariants. Every path that scores a post uses it: the
one scoring task (scoring.services.batching, exported as scoring.tasks.score_batch), the inline
pre-publish check (scoring.services.inline) and the sweeper (scoring.sweeper,
scoring.tasks.sweep_stuck_posts).

- the kick mark (kick_mark, kick_taken): whether a kick is pending. Publishing the task is
  scoring.services.batching's (publish_batch, score_kick, publish_post), beside the task;
- lease: `Lease` holds one batch's claims from acquire (the mode is the task's ids: several,
  one, or none for a kick) through fill (one refill rule, claim_up_to) to release; per-post
  claims (claim_post, claim_posts), the inline hold (inline_hold, hold_for_inline), the
  waiting posts (waiting_posts) and poison filtering;
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
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.conf import settings
from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache
from django.db import connection
from redis.exceptions import NoScriptError

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


# --- the kick mark --------------------------------------------------------------------------

KICK_PREFIX = "scoring:kick:"


def kick_key() -> str:
    """The pending mark of this database. Named from the connection settings, not the
    database's OID (scoring.workqueue): a mark is only ever early or stale by its TTL,
    and this needs no query (tests clear it before each test)."""
    db = connection.settings_dict
    return f"{KICK_PREFIX}{db.get('HOST') or ''}:{db.get('PORT') or ''}/{db['NAME']}"


def kick_mark() -> bool:
    """Take the pending mark before publishing a kick (scoring.services.batching.score_kick):
    False when a kick is pending already (its task will see the waiting posts), True when
    taken, or when Redis is down (no mark: publish anyway)."""
    try:
        return bool(cache.add(kick_key(), 1, timeout=settings.SCORING_KICK_TTL_S))
    except Exception:  # Redis down: no mark, publish (the broker is probably down too)
        logger.warning("scoring.kick_mark_failed", exc_info=True)
        return True


def kick_taken() -> None:
    """The kicked task is about to query the waiting posts: delete the pending mark first, so
    that any post committed after this point publishes a kick of its own. Never raises (the
    mark then expires by itself)."""
    try:
        cache.delete(kick_key())
    except Exception:
        logger.warning("scoring.kick_clear_failed", exc_info=True)


# --- lease: one batch's claims, from acquire to release -----------------------------------------


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


def still_received(post_ids: list[int]) -> set[int]:
    """The posts of `post_ids` still in `received`. By primary key alone, the status checked
    here: with `status` in the WHERE clause the planner may pick the received-posts index, whose
    dead entries (every post scored since the last vacuum) it then reads in full (28 ms at
    10,000 posts without statistics)."""
    statuses = Post.objects.filter(id__in=post_ids).values_list("id", "status")
    return {i for i, status in statuses if status == PostStatus.RECEIVED}


def claim_up_to(candidates: Sequence[int], needed: int, token: str, *, refill: bool) -> tuple[list[int], int]:
    """The one refill rule: claim the first `needed` candidates in one round trip and, with
    `refill`, when other holders had some of them, a second round trip for as many more from
    the rest of the list (waiting_posts returns twice the posts asked for). Returns the ids
    claimed and how many candidates were tried."""
    claimed = claim_posts(candidates[:needed], token)
    tried = min(needed, len(candidates))
    if refill and len(claimed) < needed and len(candidates) > needed:
        more = candidates[needed:][: needed - len(claimed)]
        claimed += claim_posts(more, token)
        tried += len(more)
    return claimed, tried


class Skip(NamedTuple):
    """A post the lease does not score: (post id, its status or "" when unknown, why)."""

    post_id: int
    status: str
    reason: str  # "done", "gone", "not_pending"


@dataclass
class Lease:
    """One batch's claims under `token`, from acquire to release: the task's own posts first,
    then the waiting posts the batch is filled with. `Lease.acquire` takes the mode as data (the
    post ids a task was given: several, one, or none for a kick) and is the only place claims
    are taken for a batch; `fill` tops the batch up; `release` gives every claim back (with the
    done markers) in one round trip."""

    token: str
    size: int
    own: list[int] = field(default_factory=list)
    claimed: list[int] = field(default_factory=list)
    # Own posts another worker holds: the task retries (PostClaimed) while they still wait.
    busy: list[int] = field(default_factory=list)
    # Nothing of these to score (marked done, gone, scored already): the task's answer for them.
    skipped: list[Skip] = field(default_factory=list)
    # One post, scored already and reported since: claimed, to be re-scored rather than batched.
    rescore: int | None = None
    # A kick's lease: more posts wait than it took (the caller kicks the next task at once).
    left_over: bool = False
    # The fill: posts left out of it besides the first own post (which its query excludes), and
    # whether a second round trip claims further candidates when other workers hold some of the
    # first. None: no fill (a kick's lease takes the waiting posts in the first place).
    fill_skip: frozenset[int] | None = frozenset()
    refill: bool = False

    @classmethod
    def acquire(
        cls,
        post_ids: Sequence[int] | None,
        *,
        size: int,
        after_report: bool = False,
        rescore_from: Iterable[str] = (),
        token: str | None = None,
    ) -> Lease:
        """Claim a batch's own posts. `post_ids` None: a kick, the oldest waiting posts; one id:
        a post that needs a task of its own (`after_report`: it has a new report, so it is read
        even when marked done, and a post in `rescore_from` with reports is claimed for a
        re-score); several: a batch-ingest chunk. Raises PostClaimed when the one post given
        still waits and another holder has it."""
        lease = cls(token=token or uuid.uuid4().hex, size=size)
        if post_ids is None:
            lease._take_waiting()
        elif len(post_ids) == 1:
            lease._take_post(post_ids[0], after_report=after_report, rescore_from=frozenset(rescore_from))
        else:
            lease._take_chunk(post_ids)
        return lease

    def _take_waiting(self) -> None:
        """A kick's own posts: up to a batch of the oldest waiting ones.

        A full batch with more seen (or possibly) waiting: left over. Fewer than a full batch:
        every post seen was tried, and those not claimed are held by other batches (which score
        them) or poisoned (the sweeper's), so nothing is left over, which is also what stops a
        chain of kicks over a head of held posts. A head made only of held or poisoned posts (a
        killed worker's claims until they expire, a run of corrupt posts) must not hold up the
        posts behind it: the newest waiting posts are taken instead."""
        kick_taken()  # before the query: a post committed after this kicks on its own
        size = self.size
        candidates, more = waiting_posts(limit=size)
        claimed, tried = claim_up_to(candidates, size, self.token, refill=True)
        if not claimed and more:
            newest, _ = waiting_posts(limit=size, newest=True)
            claimed = claim_posts(newest[:size], self.token)
            self.left_over = len(claimed) == size
        else:
            self.left_over = len(candidates) > tried or (len(claimed) == size and more)
        self.own, self.claimed, self.fill_skip = list(claimed), claimed, None

    def _take_post(self, post_id: int, *, after_report: bool, rescore_from: frozenset[str]) -> None:
        """One post's claim, or why there is nothing to batch: marked done, gone, scored
        already. A post a batch marked done is answered before any query, unless the task came
        from a new report (`after_report`): that one must see the report count, so it reads the
        post."""
        if not after_report and posts_done([post_id]):
            self.skipped.append(Skip(post_id, "", "done"))
            return
        row = Post.objects.filter(id=post_id).values("status", "report_count").first()
        if row is None:
            self.skipped.append(Skip(post_id, "", "gone"))
            return
        status = row["status"]
        reported = status in rescore_from and row["report_count"] > 0
        if status != PostStatus.RECEIVED and not reported:
            # Scored already (by an earlier batch or the inline check) and nothing to bring up
            # to date: the common case of a task whose post another batch took. No claim needed.
            self.skipped.append(Skip(post_id, status, "not_pending"))
            return
        if not claim_post(post_id, self.token):
            if status == PostStatus.RECEIVED:
                raise PostClaimed(f"post {post_id} is being scored by another worker")
            self.skipped.append(Skip(post_id, status, "not_pending"))
            return
        self.claimed = [post_id]
        if status != PostStatus.RECEIVED:
            self.rescore = post_id  # scored already and reported since: re-scored, not batched
            return
        self.own, self.refill = [post_id], True

    def _take_chunk(self, post_ids: Sequence[int]) -> None:
        """A chunk's posts not marked done and still waiting, claimed in one round trip; those
        another worker holds are `busy`. The fill leaves out every post of the chunk and tries
        one round of candidates only: a chunk is mostly a full batch of its own posts."""
        done_before = posts_done(post_ids)
        wanted = [i for i in dict.fromkeys(post_ids) if i not in done_before]
        if not wanted:
            self.skipped = [Skip(i, "", "done") for i in post_ids]
            return
        pending = still_received(wanted)
        wanted = [i for i in wanted if i in pending]
        if not wanted:
            self.skipped = [Skip(i, "", "not_pending") for i in post_ids]
            return
        claimed = claim_posts(wanted, self.token)
        taken = set(claimed)
        self.own, self.claimed = list(claimed), claimed
        self.busy = [i for i in wanted if i not in taken]
        self.fill_skip = frozenset(post_ids)

    def fill(self) -> None:
        """Claims on waiting posts (oldest first, poisoned ones left out) up to the batch size,
        by the one refill rule (claim_up_to); nothing for a kick's lease or a lease of nothing."""
        needed = self.size - len(self.claimed)
        if not self.own or needed <= 0 or self.fill_skip is None:
            return
        skip = self.fill_skip
        candidates = [i for i in waiting_posts(limit=needed + len(skip), exclude=self.own[0])[0] if i not in skip]
        taken, _ = claim_up_to(candidates, needed, self.token, refill=self.refill)
        self.claimed += taken

    def give_back(self, post_ids: Sequence[int]) -> None:
        """Release some claims early (a failed batch's filled-in posts) and keep the rest."""
        release_posts(post_ids, self.token)
        back = set(post_ids)
        self.claimed = [i for i in self.claimed if i not in back]

    def release(self, *, done: Iterable[int] = ()) -> None:
        """The end of the lease: every claim still held released and `done` marked scored, in
        one round trip (release_posts)."""
        release_posts(self.claimed, self.token, done=done)


class PostClaimed(Exception):
    """Another worker holds this post's claim; retry after it finishes or its claim expires."""


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


def hold_token(post_id: int) -> str:
    return f"inline-{post_id}"


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
