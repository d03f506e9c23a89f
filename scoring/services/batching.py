"""Micro-batching: the one service behind the one scoring task (scoring.tasks.score_batch), and
the sweeper's view of stuck webhooks.

What the task is given decides its own posts:
- several post ids: a chunk of a batch-ingest request (one message per SCORING_BATCH_SIZE posts);
- one post id: a post that needs a task of its own: an inline check that did not decide, a new
  report (`after_report`), the sweeper, ingest when the inline hold failed;
- no ids: a kick from one-post-per-request ingest (scoring.workqueue: no message per post), whose
  own posts are the oldest waiting ones.

Then every batch goes through the same lease (scoring.workqueue): claims on its own posts,
the batch filled up to SCORING_BATCH_SIZE with other posts waiting in `received` (oldest first,
poisoned ones left out), one Triton call and one write transaction, and the release with the
done markers. A task whose posts another batch scored finds them marked done and returns at
once. A claim is a Redis key (SET NX with a TTL), so two workers never score the same post
concurrently, and a claim held by a killed worker expires by itself.

Why this shape: under load the queue holds many posts, so batches fill up and the per-batch
costs (a few queries, one Triton round trip) are shared; when idle, a batch is just the one post
and nothing waits for a batch to fill. A slow or broken post cannot hold a batch hostage: the
Triton call has a timeout, and a batch that fails is scored again post by post. The waiting
posts it took go back, with a kick (they may have no task of their own), and its own posts are
scored alone; a post that fails alone is poisoned (left out of batches for
SCORING_POISON_TTL_S, then the sweeper's). A task given one post answers for it: that post's
failure alone fails the task, and a batch that was that post alone is not sent again. Tasks
with several posts, and kicks, log such a post and score the rest."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
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


@dataclass
class _Lease:
    """One batch's claims under `token`: the task's own posts first, then the waiting posts the
    batch is filled with."""

    token: str
    own: list[int]
    claimed: list[int]
    # Own posts another worker holds: the task retries (PostClaimed) while they still wait.
    busy: list[int] = field(default_factory=list)
    # The fill: posts left out of it besides the first own post (which its query excludes), and
    # whether a second round trip claims further candidates when other workers hold some of the
    # first. None: no fill (a kick's lease takes the waiting posts in the first place).
    fill_skip: frozenset[int] | None = frozenset()
    refill: bool = False


def _scored(results: list[ScoreResult]) -> list[int]:
    return [r.post_id for r in results if r.status and r.status != PostStatus.RECEIVED]


def score_batch(
    *,
    post_ids: Sequence[int] | None = None,
    after_report: bool = False,
    batch_size: int | None = None,
    client: ScoringClient | None = None,
) -> list[ScoreResult]:
    """Score `post_ids` together with other waiting posts, up to SCORING_BATCH_SIZE in one
    Triton call and one write transaction; with no ids, the oldest waiting posts (a kick).

    Raises PostClaimed when a given post still waiting is claimed by another worker (the task
    retries; a chunk first scores the posts it could claim). `after_report`: the one post given
    has a new report, so it is read even when a batch marked it done, and an already scored post
    is re-scored with the report."""
    started = time.perf_counter()
    size = settings.SCORING_BATCH_SIZE if batch_size is None else batch_size
    token = uuid.uuid4().hex
    one_post = post_ids is not None and len(post_ids) == 1
    if after_report and not one_post:
        raise ValueError("after_report concerns the one post given")
    if post_ids is None:
        lease: _Lease | list[ScoreResult] = _lease_waiting(size=size, token=token)
    elif one_post:
        lease = _lease_post(post_ids[0], token=token, after_report=after_report, client=client)
    else:
        lease = _lease_chunk(post_ids, token=token)
    if isinstance(lease, list):  # nothing of the task's own to score: the answer
        return lease
    done: list[int] = []
    results: list[ScoreResult] = []
    try:
        if lease.fill_skip is not None:
            _fill(lease, size=size)
        if lease.claimed:
            results = _score_claimed(lease, client=client, started=started, one_post=one_post)
            done = _scored(results)
    finally:
        release_posts(lease.claimed, lease.token, done=done)
    if lease.busy and still_received(lease.busy):
        raise PostClaimed(f"posts {lease.busy} are being scored by another worker")
    return results


def _lease_waiting(*, size: int, token: str) -> _Lease:
    """A kick's own posts: the oldest waiting, up to a batch. When more are waiting than this
    batch takes, the next kick goes out first, so the other worker processes drain the rest
    meanwhile."""
    kick_taken()  # before the query: a post committed after this kicks on its own
    claimed, left_over = claim_waiting(size=size, token=token)
    if left_over:
        kick_quietly()
    return _Lease(token=token, own=list(claimed), claimed=claimed, fill_skip=None)


def _lease_post(
    post_id: int, *, token: str, after_report: bool, client: ScoringClient | None
) -> _Lease | list[ScoreResult]:
    """One post's lease, or its answer when there is nothing to batch: marked done, gone,
    scored already, or (after a report) re-scored here. Raises PostClaimed when another worker
    is scoring the post right now.

    A post a batch marked done returns before any query, unless the task came from a new report
    (`after_report`): that one must see the report count, so it reads the post."""
    if not after_report and posts_done([post_id]):
        return [ScoreResult(post_id=post_id, status="", skipped="done")]
    row = Post.objects.filter(id=post_id).values("status", "report_count").first()
    if row is None:
        return [ScoreResult(post_id=post_id, status="", skipped="gone")]
    status = row["status"]
    reported = status in RESCORE_FROM and row["report_count"] > 0
    if status != PostStatus.RECEIVED and not reported:
        # Scored already (by an earlier batch or the inline check) and nothing to bring up to
        # date: the common case of a task whose post another batch took. No claim needed.
        return [ScoreResult(post_id=post_id, status=status, skipped="not_pending")]
    if not claim_post(post_id, token):
        if status == PostStatus.RECEIVED:
            raise PostClaimed(f"post {post_id} is being scored by another worker")
        return [ScoreResult(post_id=post_id, status=status, skipped="not_pending")]
    if status != PostStatus.RECEIVED:
        # Already scored: the task came from a new report (ingest's report service publishes
        # it while the post waits), so bring the score up to date; rescore_post is a no-op
        # when no report is new.
        try:
            return [rescore_post(post_id=post_id, client=client)]
        finally:
            release_posts([post_id], token)
    return _Lease(token=token, own=[post_id], claimed=[post_id], refill=True)


def _lease_chunk(post_ids: Sequence[int], *, token: str) -> _Lease | list[ScoreResult]:
    """A chunk's lease: its posts not marked done and still waiting, claimed in one round trip;
    those another worker holds are `busy`. The fill leaves out every post of the chunk and tries
    one round of candidates only: a chunk is mostly a full batch of its own posts."""
    done_before = posts_done(post_ids)
    wanted = [i for i in dict.fromkeys(post_ids) if i not in done_before]
    if not wanted:
        return [ScoreResult(post_id=i, status="", skipped="done") for i in post_ids]
    pending = still_received(wanted)
    wanted = [i for i in wanted if i in pending]
    if not wanted:
        return [ScoreResult(post_id=i, status="", skipped="not_pending") for i in post_ids]
    claimed = claim_posts(wanted, token)
    taken = set(claimed)
    return _Lease(
        token=token,
        own=list(claimed),
        claimed=claimed,
        busy=[i for i in wanted if i not in taken],
        fill_skip=frozenset(post_ids),
    )


def _fill(lease: _Lease, *, size: int) -> None:
    """Claims on waiting posts (oldest first, poisoned ones left out) up to `size`, in one round
    trip (two with `refill` when other workers hold some of the first candidates:
    fill_candidates returns twice the posts asked for)."""
    needed = size - len(lease.claimed)
    if not lease.claimed or needed <= 0 or lease.fill_skip is None:
        return
    skip = lease.fill_skip
    candidates = [i for i in fill_candidates(lease.claimed[0], needed + len(skip)) if i not in skip]
    taken = claim_posts(candidates[:needed], lease.token)
    if lease.refill and len(taken) < needed and len(candidates) > needed:
        taken += claim_posts(candidates[needed:][: needed - len(taken)], lease.token)
    lease.claimed += taken


def _score_claimed(lease: _Lease, *, client: ScoringClient | None, started: float, one_post: bool) -> list[ScoreResult]:
    """Score the lease's posts in one batch. One bad post must not block the batch: when it
    fails (not retryably), the filled-in posts go back, with a kick, since such a post may have
    no task of its own, and the own posts are scored one by one (a post failing alone is
    poisoned). `one_post`: the task's one post answers for itself, its failure alone raises; a
    batch of just that post has failed alone already."""
    try:
        return score_posts(post_ids=lease.claimed, client=client, started=started)
    except RETRYABLE_ERRORS:
        raise
    except Exception:
        if one_post and len(lease.claimed) == 1:
            mark_poisoned(lease.claimed[0])  # keep it out of other batches for a while
            raise
        logger.exception("scoring.batch_failed post_ids=%s size=%s; scoring alone", lease.own, len(lease.claimed))
    own = set(lease.own)
    fillers = [i for i in lease.claimed if i not in own]
    if fillers:
        release_posts(fillers, lease.token)
        kick_quietly()
    lease.claimed = list(lease.own)
    results: list[ScoreResult] = []
    for post_id in lease.own:
        try:
            results += _score_alone(post_id=post_id, client=client, started=started)
        except RETRYABLE_ERRORS:
            raise
        except Exception:
            if one_post:
                raise
            logger.exception("scoring.post_failed post_id=%s", post_id)
    return results


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
