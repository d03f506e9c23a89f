"""Threshold calibration from reviewer outcomes, what-if previews, and saving thresholds.

Calibration uses the effective labelled examples from moderator decisions (one per post, the
conflict rule of feedback.selectors) and the final score each post had when it was decided.
By default only examples scored by the fusion version being served now count ("the current
model"); if there are fewer than MIN_CURRENT_MODEL examples, all examples are used and the page
says so.

The what-if counts what the pipeline would do, not what the final score alone says: each post
goes through scoring.services.policy.policy_actions, the rule live scoring applies (reported
posts and posts with a sub-score at escalate_threshold are never auto-approved), with the
proposed remove/approve thresholds and the active policy's escalate_threshold.

Saving goes through scoring.services.policy.policy_create_version: a new DecisionPolicy version
becomes active and an AuditLog row records before/after.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.db.models import FloatField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from core.errors import ApplicationError
from feedback.models import ExampleOrigin
from feedback.permissions import check_ml_admin
from feedback.selectors import effective_examples
from moderation.models import Post
from scoring.models import Action, DecisionPolicy, Score
from scoring.services.policy import (
    DEFAULT_ESCALATE_THRESHOLD,
    policy_actions,
    policy_create_version,
    strongest_sub_score,
)

STEPS = 101  # thresholds 0.00, 0.01, ..., 1.00
MIN_CURRENT_MODEL = 30
SUB_SCORE_FIELDS = ("text_score", "preview_score", "link_score", "behaviour_score")


@dataclass(frozen=True)
class Outcomes:
    scores: np.ndarray
    labels: np.ndarray  # 1 spam, 0 ham
    scope: str  # what the outcomes cover, for the page
    # What else the policy looks at, as the post was when it was decided (None: not known).
    report_counts: np.ndarray | None = None
    strongest_sub_scores: np.ndarray | None = None


def _served_fusion_version() -> str | None:
    from feedback.services.promotion import served_version

    number = served_version("fusion_model")
    return str(number) if number is not None else None


def reviewer_outcomes(*, days: int | None = None, current_model_only: bool = True) -> Outcomes:
    since = timezone.now() - timedelta(days=days) if days else None
    examples = [
        e for e in effective_examples(since=since, origins=[ExampleOrigin.DECISION]) if e.final_score is not None
    ]
    scope = "all reviewed posts" + (f" of the last {days} days" if days else "")
    if current_model_only:
        version = _served_fusion_version()
        current = [e for e in examples if version is not None and str(e.model_versions.get("fusion_model")) == version]
        if len(current) >= MIN_CURRENT_MODEL:
            examples, scope = (
                current,
                f"reviewed posts scored by fusion_model v{version}" + (f" in the last {days} days" if days else ""),
            )
        else:
            scope += f" (only {len(current)} scored by the served fusion model: too few, so all are used)"
    return Outcomes(
        scores=np.asarray([float(e.final_score or 0.0) for e in examples], dtype=np.float64),
        labels=np.asarray([1 if e.label == "spam" else 0 for e in examples], dtype=np.int64),
        scope=scope,
        report_counts=np.asarray(
            [float((e.features.get("behaviour") or {}).get("report_count", 0.0)) for e in examples], dtype=np.float64
        ),
        strongest_sub_scores=np.asarray(
            [strongest_sub_score((e.sub_scores or {}).values()) for e in examples], dtype=np.float64
        ),
    )


def calibration_table(outcomes: Outcomes) -> list[dict[str, Any]]:
    """Per threshold t: precision, recall and FPR of `score >= t` as the spam call."""
    s, y = outcomes.scores, outcomes.labels
    spam, ham = int(y.sum()), int(len(y) - y.sum())
    rows = []
    for t in np.linspace(0.0, 1.0, STEPS):
        flagged = s >= t - 1e-12
        tp = int(np.sum(flagged & (y == 1)))
        fp = int(np.sum(flagged & (y == 0)))
        rows.append(
            {
                "threshold": round(float(t), 2),
                "flagged": tp + fp,
                "precision": tp / (tp + fp) if tp + fp else None,
                "recall": tp / spam if spam else None,
                "fpr": fp / ham if ham else None,
                # Below the threshold: share of spam that an approve threshold here would let through.
                "spam_below": (spam - tp) / spam if spam else None,
            }
        )
    return rows


def _at(table: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    """The table's row nearest `threshold`. Where no reviewed post scores at or above it
    (`flagged` 0) precision and the false-positive rate are unknown, not 0: `known` says which."""
    index = min(range(len(table)), key=lambda i: abs(table[i]["threshold"] - threshold))
    row = dict(table[index])
    row["known"] = row["flagged"] > 0
    if not row["known"]:
        row["precision"] = row["fpr"] = None
    return row


@dataclass(frozen=True)
class RecentPosts:
    final_scores: np.ndarray
    report_counts: np.ndarray
    strongest_sub_scores: np.ndarray


def recent_posts(*, since: datetime) -> RecentPosts:
    """Scored posts received since `since`: final score, reports and the strongest sub-score of
    the Score row the final score came from (the latest one). One query."""
    latest = Score.objects.filter(post=OuterRef("pk")).order_by("-created_at", "-id")
    strongest = latest.annotate(
        strongest=Greatest(*(Coalesce(name, Value(0.0)) for name in SUB_SCORE_FIELDS), output_field=FloatField())
    ).values("strongest")[:1]
    rows = list(
        Post.objects.filter(received_at__gte=since, final_score__isnull=False)
        .annotate(strongest=Subquery(strongest, output_field=FloatField()))
        .values_list("final_score", "report_count", "strongest")
    )
    columns = np.asarray(rows, dtype=np.float64).reshape(len(rows), 3)
    return RecentPosts(
        final_scores=columns[:, 0], report_counts=columns[:, 1], strongest_sub_scores=np.nan_to_num(columns[:, 2])
    )


def _post_actions(posts: RecentPosts, policy: DecisionPolicy) -> np.ndarray:
    return policy_actions(
        policy=policy,
        final_scores=posts.final_scores,
        report_counts=posts.report_counts,
        strongest_sub_scores=posts.strongest_sub_scores,
    )


def action_counts(posts: RecentPosts, policy: DecisionPolicy) -> dict[str, int]:
    actions = _post_actions(posts, policy)
    return {
        "total": len(actions),
        "remove": int(np.sum(actions == Action.REMOVE)),
        "queue": int(np.sum(actions == Action.QUEUE)),
        "approve": int(np.sum(actions == Action.APPROVE)),
    }


def approve_outcomes(outcomes: Outcomes, policy: DecisionPolicy) -> dict[str, Any]:
    """Among the reviewed posts: how many `policy` would auto-approve, and which share of the
    spam among them would go through unreviewed."""
    actions = policy_actions(
        policy=policy,
        final_scores=outcomes.scores,
        report_counts=outcomes.report_counts,
        strongest_sub_scores=outcomes.strongest_sub_scores,
    )
    approved = actions == Action.APPROVE
    spam = int(outcomes.labels.sum())
    spam_approved = int(np.sum(approved & (outcomes.labels == 1)))
    return {
        "threshold": policy.approve_threshold,
        "approved": int(approved.sum()),
        "spam_approved": spam_approved,
        # With no reviewed post in the auto-approve range the share is not measured: unknown,
        # not 0 (the page says so).
        "spam_below": spam_approved / spam if spam and approved.any() else None,
    }


def whatif(
    *, remove_threshold: float, approve_threshold: float, days: int = 7, outcomes: Outcomes | None = None
) -> dict[str, Any]:
    """How many posts of the last `days` days each setting would have auto-removed, queued or
    approved, next to what the active policy would do with the same posts. Both go through the
    pipeline's own rule (policy_actions); the proposal keeps the active escalate_threshold, as
    saving it would (policy_create_version)."""
    since = timezone.now() - timedelta(days=days)
    active = DecisionPolicy.objects.filter(is_active=True).first()
    proposed = DecisionPolicy(
        remove_threshold=remove_threshold,
        approve_threshold=approve_threshold,
        escalate_threshold=active.escalate_threshold if active is not None else DEFAULT_ESCALATE_THRESHOLD,
    )
    posts = recent_posts(since=since)
    outcomes = outcomes or reviewer_outcomes(days=None)
    table = calibration_table(outcomes)
    changed = (
        int(np.sum(_post_actions(posts, proposed) != _post_actions(posts, active))) if active is not None else None
    )
    return {
        # Posts of the window whose action the proposal changes, against the active policy.
        "changed": changed,
        "days": days,
        "proposed": {
            "remove_threshold": remove_threshold,
            "approve_threshold": approve_threshold,
            "escalate_threshold": proposed.escalate_threshold,
            **action_counts(posts, proposed),
            "at_remove": _at(table, remove_threshold),
            "at_approve": approve_outcomes(outcomes, proposed),
        },
        "active": (
            {
                "version": active.version,
                "remove_threshold": active.remove_threshold,
                "approve_threshold": active.approve_threshold,
                "escalate_threshold": active.escalate_threshold,
                **action_counts(posts, active),
                "at_remove": _at(table, active.remove_threshold),
                "at_approve": approve_outcomes(outcomes, active),
            }
            if active
            else None
        ),
        "reviewed": len(outcomes.labels),
        "scope": outcomes.scope,
    }


def thresholds_save(*, user: Any, remove_threshold: float, approve_threshold: float, note: str) -> DecisionPolicy:
    """A new policy version from the calibration page: it decides every new post from now on,
    so the page asks for a confirmation and this asks for the why, kept in the audit entry."""
    check_ml_admin(user)
    if not note.strip():
        raise ApplicationError(
            "Say why in the note: it is kept with the policy version and in the audit log.",
            code="note_required",
            fields={"note": ["Required."]},
        )
    return policy_create_version(
        remove_threshold=remove_threshold,
        approve_threshold=approve_threshold,
        note=note.strip(),
        actor=user,
    )
