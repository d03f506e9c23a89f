"""Metrics for candidate vs production, computed the same way for both on the same rows.

Guarded metrics (the auto-promotion rule in feedback.services.promotion reads these keys):
- pr_auc: average precision of the final score (threshold-free);
- f1: spam F1 at 0.5;
- at_remove.precision / at_remove.fpr: of the posts the current policy would auto-remove
  (final >= remove_threshold), how many are spam, and which share of all ham gets removed.

at_approve counts what the pipeline would auto-approve: scoring.services.policy.policy_actions,
the rule live scoring applies, so reported posts and posts with a sub-score at the policy's
escalate_threshold are not counted as approved when the caller passes report counts and
sub-scores.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.metrics import average_precision_score, precision_recall_fscore_support

from modelops.calibration import expected_calibration_error
from scoring.models import Action, DecisionPolicy
from scoring.services.policy import policy_actions

# The thresholds a candidate is evaluated at when no policy is active yet.
DEFAULT_THRESHOLDS = {"remove": 0.9, "approve": 0.2, "escalate": 0.9}


def _safe(value: float) -> float | None:
    return None if value is None or math.isnan(value) else round(float(value), 6)


def band_metrics(y: np.ndarray, p: np.ndarray, threshold: float) -> dict[str, Any]:
    """Precision, recall and false-positive rate of `score >= threshold` as the spam call."""
    pred = p >= threshold
    tp = int(np.sum(pred & (y == 1)))
    fp = int(np.sum(pred & (y == 0)))
    fn = int(np.sum(~pred & (y == 1)))
    tn = int(np.sum(~pred & (y == 0)))
    return {
        "threshold": round(float(threshold), 6),
        "precision": _safe(tp / (tp + fp)) if tp + fp else None,
        "recall": _safe(tp / (tp + fn)) if tp + fn else None,
        "fpr": _safe(fp / (fp + tn)) if fp + tn else None,
        "flagged": tp + fp,
        "tp": tp,
        "fp": fp,
    }


def classification_metrics(
    labels: Sequence[int] | np.ndarray,
    probs: Sequence[float] | np.ndarray,
    *,
    remove_threshold: float,
    approve_threshold: float,
    escalate_threshold: float = 1.0,
    report_counts: Sequence[float] | np.ndarray | None = None,
    strongest_sub_scores: Sequence[float] | np.ndarray | None = None,
) -> dict[str, Any]:
    """Metrics of `probs` as the final score. report_counts / strongest_sub_scores (per row)
    let at_approve apply the whole decision policy; without them no row is reported or
    escalated (the right view of a sub-model scored on its own)."""
    y = np.asarray(labels, dtype=np.int64)
    p = np.asarray(probs, dtype=np.float64)
    if len(y) == 0:
        return {"n": 0}
    policy = DecisionPolicy(
        remove_threshold=remove_threshold, approve_threshold=approve_threshold, escalate_threshold=escalate_threshold
    )
    actions = policy_actions(
        policy=policy,
        final_scores=p,
        report_counts=None if report_counts is None else np.asarray(report_counts, dtype=np.float64),
        strongest_sub_scores=None if strongest_sub_scores is None else np.asarray(strongest_sub_scores, np.float64),
    )
    pred = (p >= 0.5).astype(np.int64)
    precision, recall, f1, _ = precision_recall_fscore_support(y, pred, average="binary", pos_label=1, zero_division=0)
    has_both = 0 < int(y.sum()) < len(y)
    approve = actions == Action.APPROVE
    return {
        "n": len(y),
        "spam": int(y.sum()),
        "ham": int(len(y) - y.sum()),
        "precision": _safe(float(precision)),
        "recall": _safe(float(recall)),
        "f1": _safe(float(f1)),
        "accuracy": _safe(float(np.mean(pred == y))),
        "pr_auc": _safe(float(average_precision_score(y, p))) if has_both else None,
        # Expected calibration error (10 equal-width bins): how far scores are from probabilities.
        "ece": expected_calibration_error(y, p),
        "at_remove": band_metrics(y, p, remove_threshold),
        "at_approve": {
            "threshold": round(float(approve_threshold), 6),
            "escalate_threshold": round(float(escalate_threshold), 6),
            "approved": int(approve.sum()),
            # Spam the policy would let through without review.
            "spam_approved": int(np.sum(approve & (y == 1))),
            "spam_miss_rate": _safe(float(np.sum(approve & (y == 1)) / y.sum())) if y.sum() else None,
        },
    }


def current_thresholds() -> dict[str, float]:
    """The active policy's thresholds (and version), or the defaults when none is active."""
    policy = DecisionPolicy.objects.filter(is_active=True).first()
    if policy is None:
        return dict(DEFAULT_THRESHOLDS)
    return {
        "remove": policy.remove_threshold,
        "approve": policy.approve_threshold,
        "escalate": policy.escalate_threshold,
        "policy_version": policy.version,
    }
