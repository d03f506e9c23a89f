"""Spam-class metrics shared by training, export, the model card and the GPU check.

numpy only: the fine-tune loop and benchmarks/gpu_check.py also run on a GPU node's stock PyTorch
image, which has no scikit-learn. The formulas are scikit-learn's (precision_recall_fscore_support
with average="binary", zero_division=0; average_precision_score), and a test holds them equal.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

THRESHOLD = 0.5


def average_precision(labels: np.ndarray, probs: np.ndarray) -> float:
    """Area under the precision-recall step curve: sum over distinct thresholds of (recall step) x precision."""
    order = np.argsort(-probs, kind="mergesort")
    scores, truth = probs[order], labels[order]
    # The last index of each run of equal scores: tied texts enter the curve together.
    cuts = np.r_[np.flatnonzero(np.diff(scores)), len(scores) - 1]
    true_pos = np.cumsum(truth)[cuts]
    precision = true_pos / (cuts + 1)
    recall = true_pos / true_pos[-1]
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def spam_metrics(labels: Sequence[int], probs: np.ndarray, *, threshold: float = THRESHOLD) -> dict[str, float]:
    """Accuracy, precision/recall/F1 of the spam class at ``threshold``, and PR-AUC (average precision)."""
    y = np.asarray(labels, dtype=np.int64)
    p = np.asarray(probs, dtype=np.float64)
    pred = (p >= threshold).astype(np.int64)
    tp = int(((pred == 1) & (y == 1)).sum())
    predicted, actual = int(pred.sum()), int(y.sum())
    precision = tp / predicted if predicted else 0.0
    recall = tp / actual if actual else 0.0
    f1 = 2 * tp / (predicted + actual) if predicted + actual else 0.0
    pr_auc = average_precision(y, p) if 0 < actual < len(y) else float("nan")
    return {
        "accuracy": float((pred == y).mean()) if len(y) else 0.0,
        "precision": float(precision),
        "recall": float(recall),
        "f1": float(f1),
        "pr_auc": pr_auc,
        "n": len(y),
        "spam": actual,
        "threshold": threshold,
    }
