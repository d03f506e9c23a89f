"""Micro-batching for the scoring tasks, and the sweeper.

Three tasks start a batch: score_posts (one message per ingest chunk of a batch request),
score_waiting (a kick from one-post-per-request ingest, scoring.workqueue: no message per
post) and score_post (one post: an inline check that did not decide, a report, the sweeper).
Each claims its own posts plus other posts still waiting in `received` (oldest first) up to
SCORING_BATCH_SIZE and scores them in one Triton call and one write transaction; a task whose
posts another batch scored finds them marked done and returns at once. A claim is a Redis key
(cache.add = SET NX with a TTL), so two workers never score the same post concurrently, and a
claim held by a killed worker expires by itself.

Why this shape: under load the queue holds many posts, so batches fill up and the per-batch
costs (a few queries, one Triton round trip) are shared; when idle, a batch is just the one post
and nothing waits for a batch to fill. A slow or broken post cannot hold a batch hostage: the
Triton call has a timeout, and a batch the server rejects is re-scored post by post."""

from __future__ import annotations

import logging
import time
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.utils import timezone

from moderation.models import Post, PostStatus
from scoring.models import WebhookDelivery
from scoring.services.inference import ScoringClient, TritonUnavailable
from scoring.services.scoring import RESCORE_FROM, ScoreResult, rescore_post, score_posts
from scoring.workqueue import (
    claim_post,
    claim_posts,
    claim_waiting,
    fill_candidates,
    kick_quietly,
    kick_taken,
    mark_poisoned,
    posts_done,
    release_posts,
    still_received,
)

logger = logging.getLogger(__name__)


RETRYABLE_ERRORS = (TritonUnavailable, OperationalError, InterfaceError)


class PostClaimed(Exception):
    """Another worker holds this post's claim; retry after it finishes or its claim expires."""


def _scored(results: list[ScoreResult]) -> list[int]:
    return [r.post_id for r in results if r.status and r.status != PostStatus.RECEIVED]


def score_post_batch(
    *,
    post_id: int,
    batch_size: int | None = None,
    client: ScoringClient | None = None,
    after_report: bool = False,
) -> list[ScoreResult]:
    """Score `post_id` together with other waiting posts. Raises PostClaimed when another
    worker is scoring `post_id` right now (the task retries).

    A post a batch marked done returns before any query, unless the task came from a new
    report (`after_report`): that one must see the report count, so it reads the post."""
    started = time.perf_counter()
    if not after_report and posts_done([post_id]):
        return [ScoreResult(post_id=post_id, status="", skipped="done")]
    size = settings.SCORING_BATCH_SIZE if batch_size is None else batch_size
    token = uuid.uuid4().hex
    row = Post.objects.filter(id=post_id).values("status", "report_count").first()
    if row is None:
        return [ScoreResult(post_id=post_id, status="", skipped="gone")]
    if row["status"] != PostStatus.RECEIVED and not (row["status"] in RESCORE_FROM and row["report_count"] > 0):
        # Scored already (by an earlier batch or the inline check) and nothing to bring up to
        # date: the common case of a task whose post another batch took. No claim needed.
        return [ScoreResult(post_id=post_id, status=row["status"], skipped="not_pending")]
    if not claim_post(post_id, token):
        if row["status"] == PostStatus.RECEIVED:
            raise PostClaimed(f"post {post_id} is being scored by another worker")
        return [ScoreResult(post_id=post_id, status=row["status"], skipped="not_pending")]
    claimed = [post_id]
    done: list[int] = []
    try:
        if row["status"] != PostStatus.RECEIVED:
            # Already scored: the enqueue came from a new report (ingest's report service
            # enqueues score_post), so bring the score up to date. A post without reports
            # costs nothing more; rescore_post is a no-op when no report is new.
            if row["status"] in RESCORE_FROM and row["report_count"] > 0:
                return [rescore_post(post_id=post_id, client=client)]
            return [ScoreResult(post_id=post_id, status=row["status"], skipped="not_pending")]
        # Claims in one round trip (two when other workers hold some of the first candidates:
        # fill_candidates returns twice the posts needed for that).
        candidates = fill_candidates(post_id, size - 1)
        claimed += claim_posts(candidates[: size - 1], token)
        if len(claimed) < size and len(candidates) > size - 1:
            claimed += claim_posts(candidates[size - 1 :][: size - len(claimed)], token)
        try:
            results = score_posts(post_ids=claimed, client=client, started=started)
            done = _scored(results)
            return results
        except RETRYABLE_ERRORS:
            raise
        except Exception:
            if len(claimed) == 1:
                # This post fails on its own: keep it out of other batches for a while.
                mark_poisoned(post_id)
                raise
            # One bad post must not block the batch: score this task's own post alone; the
            # other posts' own tasks do the same for theirs.
            logger.exception("scoring.batch_failed post_id=%s size=%s; scoring it alone", post_id, len(claimed))
            release_posts(claimed[1:], token)
            if len(claimed) > 1:
                kick_quietly()  # the other posts may have had no task of their own (kicks)
            del claimed[1:]
            results = _score_alone(post_id=post_id, client=client, started=started)
            done = _scored(results)
            return results
    finally:
        release_posts(claimed, token, done=done)


def score_posts_batch(
    *, post_ids: list[int], batch_size: int | None = None, client: ScoringClient | None = None
) -> list[ScoreResult]:
    """Score the posts of one ingest chunk (the score_posts task): skip those marked done or no
    longer in `received`, claim the rest in one round trip, fill the batch up to
    SCORING_BATCH_SIZE with other waiting posts, score them in one Triton call and one write
    transaction. Raises PostClaimed when some of `post_ids` are claimed by another worker and
    still waiting (the task retries; the posts scored here are then marked done)."""
    started = time.perf_counter()
    size = settings.SCORING_BATCH_SIZE if batch_size is None else batch_size
    done_before = posts_done(post_ids)
    wanted = [i for i in dict.fromkeys(post_ids) if i not in done_before]
    if not wanted:
        return [ScoreResult(post_id=i, status="", skipped="done") for i in post_ids]
    pending = still_received(wanted)
    wanted = [i for i in wanted if i in pending]
    if not wanted:
        return [ScoreResult(post_id=i, status="", skipped="not_pending") for i in post_ids]
    token = uuid.uuid4().hex
    claimed = claim_posts(wanted, token)
    busy = [i for i in wanted if i not in set(claimed)]
    done: list[int] = []
    results: list[ScoreResult] = []
    try:
        if claimed and len(claimed) < size:
            exclude = set(post_ids)
            candidates = [
                i for i in fill_candidates(claimed[0], size - len(claimed) + len(exclude)) if i not in exclude
            ]
            claimed += claim_posts(candidates[: size - len(claimed)], token)
        own = [i for i in claimed if i in pending]
        if claimed:
            results, claimed = _score_claimed(claimed=claimed, own=own, token=token, client=client, started=started)
            done = _scored(results)
    finally:
        release_posts(claimed, token, done=done)
    if busy and still_received(busy):
        raise PostClaimed(f"posts {busy} are being scored by another worker")
    return results


def score_waiting_batch(*, batch_size: int | None = None, client: ScoringClient | None = None) -> list[ScoreResult]:
    """The kicked task (scoring.workqueue): score the oldest posts waiting in `received`,
    up to SCORING_BATCH_SIZE of them in one Triton call and one write transaction. When more
    are waiting than this batch takes, the next kick goes out first, so the other worker
    processes drain the rest meanwhile."""
    started = time.perf_counter()
    size = settings.SCORING_BATCH_SIZE if batch_size is None else batch_size
    kick_taken()  # before the query: a post committed after this kicks on its own
    token = uuid.uuid4().hex
    claimed, left_over = claim_waiting(size=size, token=token)
    done: list[int] = []
    results: list[ScoreResult] = []
    try:
        if left_over:
            kick_quietly()
        if claimed:
            results, claimed = _score_claimed(claimed=claimed, own=claimed, token=token, client=client, started=started)
            done = _scored(results)
    finally:
        release_posts(claimed, token, done=done)
    return results


def _score_claimed(
    *, claimed: list[int], own: list[int], token: str, client: ScoringClient | None, started: float
) -> tuple[list[ScoreResult], list[int]]:
    """Score `claimed` in one batch; returns the results and the posts still claimed. One bad
    post must not block the batch: when it fails (not retryably), the posts of `own` are scored
    one by one (a post failing alone is poisoned and left to the sweeper) and the other claims
    go back, with a kick, since such a post may have no task of its own (kicks)."""
    try:
        return score_posts(post_ids=claimed, client=client, started=started), claimed
    except RETRYABLE_ERRORS:
        raise
    except Exception:
        logger.exception("scoring.batch_failed post_ids=%s size=%s; scoring alone", own, len(claimed))
    keep = set(own)
    fillers = [i for i in claimed if i not in keep]
    if fillers:
        release_posts(fillers, token)
        kick_quietly()
    results: list[ScoreResult] = []
    for post_id in own:
        try:
            results += _score_alone(post_id=post_id, client=client, started=started)
        except RETRYABLE_ERRORS:
            raise
        except Exception:
            logger.exception("scoring.post_failed post_id=%s", post_id)
    return results, list(own)


def _score_alone(*, post_id: int, client: ScoringClient | None, started: float) -> list[ScoreResult]:
    try:
        return score_posts(post_ids=[post_id], client=client, started=started)
    except RETRYABLE_ERRORS:
        raise
    except Exception:
        mark_poisoned(post_id)
        raise


def stuck_webhook_ids(*, older_than_s: float | None = None, limit: int = 1000) -> list[int]:
    """Deliveries never attempted long after they were written: their enqueue was lost."""
    threshold = 3 * (settings.SCORING_SWEEP_AFTER_S if older_than_s is None else older_than_s)
    cutoff = timezone.now() - timedelta(seconds=threshold)
    return list(
        WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING, attempts=0, created_at__lt=cutoff)
        .order_by("created_at")
        .values_list("id", flat=True)[:limit]
    )
