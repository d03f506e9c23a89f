"""Re-score the posts waiting for a moderator after the served models changed (a promotion or a
rollback, feedback.services.promotion), so their Score rows, final score, queue priority and
their place in the Teach tab come from the model that serves now, not from the one they arrived
with. The task is published on the commit of the promotion (waiting_rescore_publish, through
scoring.api), never run inside it; QUEUE_RESCORE_AFTER_PROMOTION switches it off.

The same path as a report's re-score (scoring.services.scoring.rescore_post): the features
loaded with the posts, prepare, one Triton call per batch (infer), the next revision of the
post under the new model set (revisions_assign), and settle, whose transaction locks the posts,
decides (scoring.services.decide) and writes through persist. What that means for a waiting post:

- it stays queued with its new score and priority, or, when the new score crosses the policy's
  auto-remove threshold (or an enforcement or the abuse rule removes it), it is removed
  automatically exactly as a report's re-score would remove it: the Score row says why, the
  spam counters move, the platform gets its webhook and the statement of reasons is written
  after the commit (scoring.services.removal_statements). A queued post is never approved
  automatically: `queued -> auto_approved` is not a transition (moderation.models
  POST_TRANSITIONS), so a low new score only lowers its priority;
- a post a moderator holds (a live claim, or assigned to a moderator) is skipped: it is left
  as it is, score included, under the same row lock a claim or a decision takes, so nothing is
  decided away under them (decide.OWNED). A post in a specialist queue with no moderator is
  re-scored like any other;
- a post a human decided is not waiting and is never touched (only `queued` may change here);
- a post whose latest score came from the model set serving now is skipped ("up_to_date"), so
  a second run writes nothing. The first batch's answer tells which model set serves now; the
  rest of the run then leaves out, in one query, the posts already scored by it, so a repeated
  run costs one Triton call of one batch;
- Triton down (TritonUnavailable) propagates: the task retries with backoff (batches already
  written stay written; the retry skips them as up to date). A post the model rejects alone
  (model_error) keeps its score and status, unlike a first score, which queues it unscored.

Which posts, and how many: the queued posts in the queue's default order (priority, highest
first), at most QUEUE_RESCORE_MAX_POSTS, in batches of QUEUE_RESCORE_BATCH. Priority order
because that is the order moderators take posts in (the queue's default sort, and it already
counts the time a post has waited against its SLA), so the posts a moderator opens next carry
the new model's score first; newest first would refresh posts nobody reaches for a while. The
cap bounds one run's Triton and database load on a large backlog: posts past it keep their
score until a report or the next promotion re-scores them.

The posts are picked without a lock (ids in priority order, one query); each batch's own
transaction (settle) re-reads their status and ownership under the row lock, so a post claimed,
decided or re-scored by a report in between is skipped, never scored twice: the Score key
(post, model set, revision) is unique and settle reads the keys written under the lock.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Sequence

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from moderation.models import Post, PostStatus
from scoring.services.batching import RETRY_OPTIONS
from scoring.services.inference import ScoringClient, get_client
from scoring.services.scoring import ScoreResult, infer, load_in_statuses, prepare, revisions_assign, settle

logger = logging.getLogger(__name__)

# Only posts waiting for a human: an auto-approved post is re-scored by a report, not here.
WAITING = frozenset({PostStatus.QUEUED})
UP_TO_DATE = "up_to_date"  # its latest score came from the model set serving now
# One run goes through up to QUEUE_RESCORE_MAX_POSTS posts, batch after batch.
SOFT_TIME_LIMIT_S = 300
TIME_LIMIT_S = 330


def waiting_ids(*, limit: int) -> list[int]:
    """The queued posts no moderator holds, highest priority first (the queue's default order,
    post_priority_idx), at most `limit`. Read without a lock: settle re-checks under it."""
    now = timezone.now()
    held = Q(assigned_to__isnull=False) | Q(claimed_by__isnull=False, claimed_until__gt=now)
    return list(
        Post.objects.filter(status=PostStatus.QUEUED)
        .exclude(held)
        .order_by("-priority", "id")
        .values_list("pk", flat=True)[: max(0, limit)]
    )


def waiting_rescore(
    *, client: ScoringClient | None = None, max_posts: int | None = None, batch_size: int | None = None
) -> list[ScoreResult]:
    """Re-score up to `max_posts` waiting posts (QUEUE_RESCORE_MAX_POSTS) with the models
    serving now, `batch_size` (QUEUE_RESCORE_BATCH) per Triton call and transaction. One
    ScoreResult per post looked at: written (score_id set) or skipped with the reason."""
    size = max(1, settings.QUEUE_RESCORE_BATCH if batch_size is None else batch_size)
    cap = settings.QUEUE_RESCORE_MAX_POSTS if max_posts is None else max_posts
    ids = waiting_ids(limit=cap)
    client = client or get_client()
    results: list[ScoreResult] = []
    served: str | None = None
    start = 0
    while start < len(ids):
        chunk = ids[start : start + size]
        start += len(chunk)
        found, served_now = _rescore_batch(chunk, client=client, served=served)
        results += found
        if served is None and served_now is not None:
            served = served_now
            # The posts already scored by it need no Triton call: left out in one query.
            stale = set(
                Post.objects.filter(pk__in=ids[start:]).exclude(model_version=served[:120]).values_list("pk", flat=True)
            )
            results += [
                ScoreResult(post_id=i, status=PostStatus.QUEUED, skipped=UP_TO_DATE)
                for i in ids[start:]
                if i not in stale
            ]
            ids = ids[:start] + [i for i in ids[start:] if i in stale]
    _log(results)
    return results


def _rescore_batch(
    post_ids: Sequence[int], *, client: ScoringClient, served: str | None
) -> tuple[list[ScoreResult], str | None]:
    """One batch: load, prepare, infer, then settle the posts whose score the served models
    would change. Returns the results and the model set Triton answered with (None when no
    post of the batch reached the model)."""
    started = time.perf_counter()
    loaded, waiting, results = load_in_statuses(post_ids, statuses=WAITING, skipped="not_waiting")
    items = prepare(waiting, features={p.id: loaded[p.id][1] for p in waiting})
    infer(items, client=client)  # TritonUnavailable propagates: the task retries
    answered = next((i.model_set for i in items if i.output is not None), served)
    to_settle = []
    for item in items:
        post = item.post
        if item.model_error:  # left as it was: its current score stands
            logger.warning("scoring.queue_rescore_model_error post_id=%s error=%s", post.id, item.model_error)
            results.append(ScoreResult(post_id=post.id, status=post.status, skipped="model_error"))
        elif item.model_set[:120] == post.model_version:
            results.append(ScoreResult(post_id=post.id, status=post.status, skipped=UP_TO_DATE))
        else:
            to_settle.append(item)
    revisions_assign(to_settle)
    if to_settle:
        results += settle(to_settle, allowed_from=WAITING, started=started, leave_owned=True)
    return results, answered


def _log(results: Sequence[ScoreResult]) -> None:
    written = [r for r in results if r.score_id is not None]
    by_status = Counter(r.status for r in written)
    skipped = Counter(r.skipped for r in results if r.score_id is None)
    logger.info(
        "scoring.queue_rescored posts=%s %s skipped=%s",
        len(written),
        " ".join(f"{status}={n}" for status, n in sorted(by_status.items())),
        ",".join(f"{why}:{n}" for why, n in sorted(skipped.items())) or "0",
    )


@shared_task(
    name="scoring.rescore_waiting",
    **{**RETRY_OPTIONS, "soft_time_limit": SOFT_TIME_LIMIT_S, "time_limit": TIME_LIMIT_S},
)
def rescore_waiting_task(reason: str = "") -> int:
    """Re-score the waiting queue with the models serving now (waiting_rescore). `reason`
    (what changed them, e.g. "model.promote tabular v7") is only logged. Idempotent: a second
    run finds the posts up to date and writes nothing. Returns the number of posts re-scored."""
    logger.info("scoring.queue_rescore_started reason=%s", reason)
    return sum(1 for r in waiting_rescore() if r.score_id is not None)


def waiting_rescore_publish(*, reason: str) -> None:
    """Publish rescore_waiting_task once the current transaction commits (at once outside
    one), unless QUEUE_RESCORE_AFTER_PROMOTION is off. Never raises: a broker outage is logged
    and the promotion stands; the queue keeps its scores until a report or the next promotion."""
    if not settings.QUEUE_RESCORE_AFTER_PROMOTION:
        return

    def send() -> None:
        try:
            rescore_waiting_task.delay(reason=reason)
        except Exception:
            logger.warning("scoring.queue_rescore_enqueue_failed reason=%s", reason, exc_info=True)

    transaction.on_commit(send)
