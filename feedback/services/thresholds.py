"""Threshold calibration from reviewer outcomes, what-if previews, and saving thresholds.

Calibration uses the effective labelled examples from moderator decisions (one per post, the
conflict rule of feedback.selectors) and the final score each post had when it was decided.
By default only examples scored by the fusion version being served now count ("the current
model"); if there are fewer than MIN_CURRENT_MODEL examples, all examples are used and the page
says so.

Saving goes through scoring.services.policy.policy_create_version: a new DecisionPolicy version
becomes active and an AuditLog row records before/after.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
from django.db.models import Count, Q
from django.utils import timezone

from feedback.models import ExampleOrigin
from feedback.permissions import check_ml_admin
from feedback.selectors import effective_examples
from moderation.models import Post
from scoring.models import DecisionPolicy
from scoring.services.policy import policy_create_version

STEPS = 101  # thresholds 0.00, 0.01, ..., 1.00
MIN_CURRENT_MODEL = 30


@dataclass(frozen=True)
class Outcomes:
    scores: np.ndarray
    labels: np.ndarray  # 1 spam, 0 ham
    scope: str  # what the outcomes cover, for the page


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
    index = min(range(len(table)), key=lambda i: abs(table[i]["threshold"] - threshold))
    return table[index]


def whatif(
    *, remove_threshold: float, approve_threshold: float, days: int = 7, outcomes: Outcomes | None = None
) -> dict[str, Any]:
    """How many posts of the last `days` days each setting would have auto-removed, queued or
    approved (the pipeline's rule: reported posts are never auto-approved), next to what the
    active policy would do with the same posts. One aggregate query per policy."""
    since = timezone.now() - timedelta(days=days)
    active = DecisionPolicy.objects.filter(is_active=True).first()

    def counts(remove: float, approve: float) -> dict[str, int]:
        agg = Post.objects.filter(received_at__gte=since, final_score__isnull=False).aggregate(
            total=Count("id"),
            remove=Count("id", filter=Q(final_score__gte=remove)),
            approve=Count("id", filter=Q(final_score__lt=approve, report_count=0)),
        )
        agg["queue"] = agg["total"] - agg["remove"] - agg["approve"]
        return {k: int(v) for k, v in agg.items()}

    outcomes = outcomes or reviewer_outcomes(days=None)
    table = calibration_table(outcomes)
    return {
        "days": days,
        "proposed": {
            "remove_threshold": remove_threshold,
            "approve_threshold": approve_threshold,
            **counts(remove_threshold, approve_threshold),
            "at_remove": _at(table, remove_threshold),
            "at_approve": _at(table, approve_threshold),
        },
        "active": (
            {
                "version": active.version,
                "remove_threshold": active.remove_threshold,
                "approve_threshold": active.approve_threshold,
                **counts(active.remove_threshold, active.approve_threshold),
                "at_remove": _at(table, active.remove_threshold),
                "at_approve": _at(table, active.approve_threshold),
            }
            if active
            else None
        ),
        "reviewed": len(outcomes.labels),
        "scope": outcomes.scope,
    }


def thresholds_save(*, user: Any, remove_threshold: float, approve_threshold: float, note: str = "") -> DecisionPolicy:
    check_ml_admin(user)
    return policy_create_version(
        remove_threshold=remove_threshold,
        approve_threshold=approve_threshold,
        note=note or "calibration page",
        actor=user,
    )
