"""The public door of the runtime scoring path, for the rooms above it (the API, the
dashboard, feedback, config): the pre-publish check of ``POST /api/v1/posts?wait_ms``, the score
rows the dashboard and the API read, the active policy, Triton's metrics page, and the waiting
queue's re-score a promotion asks for. Everything behind it
may change without them noticing. moderation, below, imports nothing of scoring: it announces
what happened (moderation.signals) and scoring listens (scoring.receivers).

The scoring services are imported inside the functions: the API's and the dashboard's modules
import this one while Django loads the apps, before the services can be.

The other direction: scoring writes moderation's tables (Post status and score fields, the
spam counters) only through moderation/services/score_rows.py, inside its one write
transaction per batch (scoring.services.scoring.persist)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from scoring.models import Action, DecisionPolicy, Score

if TYPE_CHECKING:
    from moderation.models import Post, Source
    from scoring.services.abuse_policy import AbuseThresholds
    from scoring.services.approval_levels import SourceApproval
    from scoring.services.inline import PrePublish

__all__ = [
    "AbuseThresholds",
    "Action",
    "DecisionPolicy",
    "Score",
    "abuse_thresholds",
    "policy_active",
    "prepublish_hold",
    "score_inline",
    "source_approvals",
    "triton_metrics_text",
    "waiting_rescore_on_commit",
    "warm_up",
]


def prepublish_hold(*, budget_ms: float) -> contextlib.AbstractContextManager[PrePublish]:
    """Wrap the ingest of a post that gets a pre-publish check of `budget_ms` right after: the
    new post is held for that check before its commit (no worker races the check for it) and
    gets no task of its own; the check publishes one if it does not decide. The context's
    value says which posts were held (`.holds(post_id)`)."""
    from scoring.services import inline

    return inline.prepublish_hold(budget_ms=budget_ms)


def score_inline(*, post: Post, budget_ms: float, held: bool) -> Score | None:
    """Score ``post`` within ``budget_ms`` (the synchronous pre-publish check) and bring it up to
    date; None when the budget ran out (the post is then scored by a worker as usual)."""
    from scoring.services import inline

    return inline.score_inline(post=post, budget_ms=budget_ms, held=held)


def policy_active() -> DecisionPolicy:
    """The active decision policy (its thresholds colour the dashboard's scores)."""
    from scoring.services.policy import policy_active as active

    return active()


def waiting_rescore_on_commit(*, reason: str) -> None:
    """The served models changed (a promotion or rollback, committed with the current
    transaction): once it commits, re-score the posts waiting for a moderator with them
    (scoring.services.queue_rescore; QUEUE_RESCORE_AFTER_PROMOTION). Never raises and never
    scores inside the caller's transaction."""
    from scoring.services.queue_rescore import waiting_rescore_publish

    waiting_rescore_publish(reason=reason)


def triton_metrics_text() -> str:
    """Triton's Prometheus page, through the shared client (raises TritonUnavailable)."""
    from scoring.serving import get_client

    return get_client().metrics_text()


def warm_up() -> None:
    """Import what the first pre-publish checks and task publishes would import (the inline
    check, the tasks, the Triton client's gRPC module), so a web process pays it at start
    (config.warmup) and not inside its first requests. Opens no connection."""
    from scoring import tasks  # noqa: F401
    from scoring.services import inline  # noqa: F401
    from scoring.serving import preload

    preload()


def abuse_thresholds(source: Source) -> AbuseThresholds:
    """The abuse scores at which `source`'s posts are held and removed (its own, else the settings)."""
    from scoring.services.abuse_policy import abuse_thresholds as thresholds

    return thresholds(source)


def source_approvals(sources: Sequence[Source]) -> list[SourceApproval] | None:
    """Per source, how far its models may approve on their own and what its next step still
    needs (scoring.services.earned_approval, approval_levels): one policy read, one aggregate per
    source below level 1. None when earned approval is off."""
    from django.conf import settings
    from django.utils import timezone

    from scoring.services.approval_levels import source_approval
    from scoring.services.policy import policy_active as active

    if not settings.EARNED_APPROVAL:
        return None
    policy, now = active(), timezone.now()
    return [source_approval(source, policy, now=now) for source in sources]
