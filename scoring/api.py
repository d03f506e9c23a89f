"""The one door from the moderation workflow into the runtime scoring path.

moderation imports this module and nothing else of scoring (import-linter checks it, see
pyproject.toml and docs/architecture.md): getting posts scored after ingest, the inline
pre-publish check of ``POST /api/v1/posts?wait_ms``, the score rows the dashboard and the API
read, the active policy's thresholds and Triton's metrics page. Everything behind it may change
without moderation noticing.

The scoring services are imported inside the functions: moderation's modules import this one
while Django loads the apps, before the services (which import moderation's models) can be.

The other direction: scoring writes moderation's tables (Post status and score fields, the
spam counters) only through moderation/services/score_rows.py, inside its one write
transaction per batch (scoring.services.scoring.persist)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from scoring.models import Action, DecisionPolicy, Score

if TYPE_CHECKING:
    from moderation.models import Post, Source
    from scoring.services.abuse_policy import AbuseThresholds

__all__ = [
    "AbuseThresholds",
    "Action",
    "DecisionPolicy",
    "Score",
    "abuse_thresholds",
    "inline_hold",
    "policy_active",
    "score_inline",
    "score_kick",
    "task_publish",
    "triton_metrics_text",
    "warm_up",
]

TaskName = Literal["score_batch", "rescore_post"]


def task_publish(*, name: TaskName, post_id: int | Sequence[int], after_report: bool = False) -> None:
    """Publish one scoring task now (callers wrap it in transaction.on_commit): score_batch
    scores a list of posts (one post id: a list of one; `after_report`: that post has a new
    report), rescore_post re-scores one scored post."""
    from scoring import tasks, workqueue

    if name == "score_batch":
        post_ids = list(post_id) if isinstance(post_id, Sequence) else [post_id]
        workqueue.publish_batch(post_ids, after_report=after_report)
    else:
        tasks.rescore_post.delay(post_id)


def score_kick() -> bool:
    """Ask a worker to score the waiting posts: publishes one score_batch message without ids
    (a kick) unless one is pending already (scoring.workqueue). True when a message was
    published."""
    from scoring import workqueue

    return workqueue.score_kick()


def inline_hold(*, post_id: int, budget_ms: float) -> bool:
    """Hold a new post for the caller's inline check before its commit makes it visible, so no
    worker races the check for it. False when it could not be held (Redis down)."""
    from scoring import workqueue

    return workqueue.inline_hold(post_id=post_id, budget_ms=budget_ms)


def score_inline(*, post: Post, budget_ms: float, held: bool) -> Score | None:
    """Score ``post`` within ``budget_ms`` (the synchronous pre-publish check) and bring it up to
    date; None when the budget ran out (the post is then scored by a worker as usual)."""
    from scoring.services import inline

    return inline.score_inline(post=post, budget_ms=budget_ms, held=held)


def policy_active() -> DecisionPolicy:
    """The active decision policy (its thresholds colour the dashboard's scores)."""
    from scoring.services.policy import policy_active as active

    return active()


def triton_metrics_text() -> str:
    """Triton's Prometheus page, through the shared client (raises TritonUnavailable)."""
    from scoring.triton_client import get_client

    return get_client().metrics_text()


def warm_up() -> None:
    """Import what the first pre-publish checks and task publishes would import (the inline
    check, the task registry, the Triton client's gRPC module), so a web process pays it at
    start (config.warmup) and not inside its first requests. Opens no connection."""
    from scoring import tasks  # noqa: F401
    from scoring.services import inline  # noqa: F401
    from scoring.triton_client import preload

    preload()


def abuse_thresholds(source: Source) -> AbuseThresholds:
    """The abuse scores at which `source`'s posts are held and removed (its own, else the settings)."""
    from scoring.services.abuse_policy import abuse_thresholds as thresholds

    return thresholds(source)
