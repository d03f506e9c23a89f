"""Coalesced scoring messages for posts ingested one per request.

A Celery message costs the worker 2.2-3.4 ms of CPU whatever it carries (Celery's and kombu's
delivery, the acks_late bookkeeping, the pool dispatch; benchmarks/task_overhead.py), more than
the scoring of a post in a batch. One message per post made one-post-per-request ingest
saturate at 24 % of the model's throughput (benchmarks/RESULTS.md), although a batch
already scored up to SCORING_BATCH_SIZE waiting posts per message: the other messages only
found their post done.

So ingest publishes a "kick" (scoring.score_waiting: score the oldest waiting posts) only when
none is pending. The pending mark is a Redis key set NX after the post's commit. The kicked
task deletes the mark BEFORE it queries the waiting posts, which is what makes this safe: a
post whose ingest saw the mark committed before that query runs, so the query sees it; a post
committed later finds no mark and kicks again. When the query finds more posts than a batch
takes, the task kicks the next one before scoring, so a backlog drains on every worker process
without a message per post.

Where this can be late, never lost: a kick whose message is lost (a web process dying between
the mark and the publish, a worker killed with the message prefetched) leaves its mark until the
TTL (SCORING_KICK_TTL_S); the next post ingested after that kicks, and its task takes the oldest
waiting posts first. With no next post, the sweeper (scoring.sweep_stuck_posts) re-enqueues
whatever stays in `received`, as for any lost message. With Redis down there is no mark: every
post publishes, as before this module."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.cache import cache
from django.db import connection

from core.tasks import task_named

logger = logging.getLogger(__name__)

KICK_PREFIX = "scoring:kick:"


def kick_key() -> str:
    """The pending mark of this database. Named from the connection settings, not the
    database's OID (scoring.services.claims): a mark is only ever early or stale by its TTL,
    and this needs no query (tests clear it before each test)."""
    db = connection.settings_dict
    return f"{KICK_PREFIX}{db.get('HOST') or ''}:{db.get('PORT') or ''}/{db['NAME']}"


def score_kick() -> bool:
    """Publish one scoring.score_waiting message unless one is pending. True when published.
    Raises what the publish raised (the caller logs it; the mark is taken back so the next
    post kicks at once)."""
    key = kick_key()
    try:
        if not cache.add(key, 1, timeout=settings.SCORING_KICK_TTL_S):
            return False
    except Exception:  # Redis down: no mark, publish (the broker is probably down too)
        logger.warning("scoring.kick_mark_failed", exc_info=True)
    try:
        task_named("scoring.score_waiting").delay()
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
