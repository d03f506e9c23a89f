"""Micro-batching: the one scoring task (score_batch_task, registered as scoring.score_batch and
exported by scoring.tasks), the service behind it, and the publishing of that task (a chunk's
ids, one post, or a kick: publish_batch, score_kick, kick_quietly, publish_post). The task lives
here, beside what publishes it, because the service publishes it too (a kick when more posts
wait): a typed reference in the same module, no look-up by name and no import circle.

What the task is given decides its own posts:
- several post ids: a chunk of a batch-ingest request (one message per SCORING_BATCH_SIZE posts);
- one post id: a post that needs a task of its own: an inline check that did not decide, a new
  report (`after_report`), the sweeper, ingest when the inline hold failed;
- no ids: a kick from one-post-per-request ingest (scoring.workqueue: no message per post), whose
  own posts are the oldest waiting ones.

Then every batch goes through the same lease (scoring.workqueue.Lease, the mode given as the
task's ids): claims on its own posts,
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
from collections.abc import Sequence

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from moderation.models import PostStatus
from scoring.services.inference import ScoringClient, TritonUnavailable
from scoring.services.scoring import RESCORE_FROM, RescoreConflict, ScoreResult, rescore_post, score_posts
from scoring.workqueue import Lease, PostClaimed, kick_mark, kick_taken, mark_poisoned, still_received

logger = logging.getLogger(__name__)

__all__ = ["PostClaimed", "score_batch", "score_batch_task"]

RETRYABLE_ERRORS = (TritonUnavailable, OperationalError, InterfaceError)


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
    one_post = post_ids is not None and len(post_ids) == 1
    if after_report and not one_post:
        raise ValueError("after_report concerns the one post given")
    lease = Lease.acquire(post_ids, size=size, after_report=after_report, rescore_from=RESCORE_FROM)
    if lease.left_over:
        kick_quietly()  # the next kick goes out first: the other worker processes drain the rest
    answer = [ScoreResult(post_id=i, status=status, skipped=why) for i, status, why in lease.skipped]
    if lease.rescore is not None:
        # Already scored: the task came from a new report (ingest's report service publishes
        # it while the post waits), so bring the score up to date; rescore_post is a no-op
        # when no report is new.
        try:
            return [rescore_post(post_id=lease.rescore, client=client)]
        finally:
            lease.release()
    if not lease.claimed and not lease.busy:
        return answer  # nothing of the task's own to score: the answer
    done: list[int] = []
    results: list[ScoreResult] = []
    try:
        lease.fill()
        if lease.claimed:
            results = _score_claimed(lease, client=client, started=started, one_post=one_post)
            done = _scored(results)
    finally:
        lease.release(done=done)
    if lease.busy and still_received(lease.busy):
        raise PostClaimed(f"posts {lease.busy} are being scored by another worker")
    return results


def _score_claimed(lease: Lease, *, client: ScoringClient | None, started: float, one_post: bool) -> list[ScoreResult]:
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
        lease.give_back(fillers)
        kick_quietly()
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


# --- the task and its publishing ----------------------------------------------------------------

# Triton down (TritonUnavailable) or the database dropping a connection retries with backoff;
# so does a post another worker holds (PostClaimed) and a re-score that lost a race
# (RescoreConflict). scoring.tasks explains the numbers.
RETRYABLE = (*RETRYABLE_ERRORS, PostClaimed, RescoreConflict)
RETRY_OPTIONS = {
    "autoretry_for": RETRYABLE,
    "retry_backoff": settings.SCORING_RETRY_BACKOFF_S,
    "retry_backoff_max": settings.SCORING_RETRY_BACKOFF_MAX,
    "retry_jitter": True,
    "max_retries": settings.SCORING_MAX_RETRIES,
    "acks_late": True,
    "soft_time_limit": settings.SCORING_TASK_SOFT_TIME_LIMIT_S,
    "time_limit": settings.SCORING_TASK_TIME_LIMIT_S,
}


@shared_task(name="scoring.score_batch", **RETRY_OPTIONS)
def score_batch_task(post_ids: list[int] | None = None, after_report: bool = False) -> None:
    """Score a batch (score_batch): `post_ids` (a batch-ingest chunk, or one post: an inline
    check that did not decide, a new report with `after_report`, the sweeper) with other waiting
    posts up to SCORING_BATCH_SIZE; with no ids (a kick), the oldest waiting posts."""
    score_batch(post_ids=post_ids, after_report=after_report)


def publish_batch(post_ids: Sequence[int] | None = None, *, after_report: bool = False) -> None:
    """Publish the one scoring task: score_batch(post_ids), or without ids a kick (score_kick
    says when). Raises what the publish raised."""
    if post_ids is None:
        score_batch_task.delay()
    elif after_report:
        score_batch_task.delay(list(post_ids), after_report=True)
    else:
        score_batch_task.delay(list(post_ids))


def score_kick() -> bool:
    """Publish one kick (scoring.score_batch with no ids) unless one is pending (the mark,
    scoring.workqueue.kick_mark). True when published.
    Raises what the publish raised (the caller logs it; the mark is taken back so the next
    post kicks at once)."""
    if not kick_mark():
        return False
    try:
        publish_batch()
    except Exception:
        kick_taken()
        raise
    return True


def kick_quietly() -> None:
    """Kick a batch for posts no task owns any more; never raises (they are then the
    sweeper's)."""
    try:
        score_kick()
    except Exception:
        logger.warning("scoring.kick_failed", exc_info=True)


def publish_post(post_id: int) -> None:
    """A held post's task (score_batch of the one post), now: its inline check did not decide.
    Never raises: with the broker down the post stays in `received` for the sweeper, as at
    ingest."""
    try:
        publish_batch([post_id])
    except Exception:
        logger.warning("scoring.inline_enqueue_failed post_id=%s", post_id, exc_info=True)
