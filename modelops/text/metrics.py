"""Spam-class metrics shared by training, export and the model card."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.metrics import accuracy_score, average_precision_score, precision_recall_fscore_support

THRESHOLD = 0.5


def spam_metrics(labels: Sequence[int], probs: np.ndarray, *, threshold: float = THRESHOLD) -> dict[str, float]:
    """Accuracy, precision/recall/F1 of the spam class at ``threshold``, and PR-AUC (average precision)."""
    y = np.asarray(labels, dtype=np.int64)
    p = np.asarray(probs, dtype=np.float64)
    pred = (p >= threshold).astype(np.int64)
    precision, recall, f1, _ = precision_recall_fscore_support(y, pred, average="binary", pos_label=1, zero_division=0)
    pr_auc = float(average_precision_score(y, p)) if 0 < y.sum() < len(y) else float("nan")
    return {
        "accuracy": float(accuracy_score(y, pred)),
        "precision": float(precision),
        "recall": float(recall),
        "f1": float(f1),
        "pr_auc": pr_auc,
        "n": len(y),
        "spam": int(y.sum()),
        "threshold": threshold,
    }
