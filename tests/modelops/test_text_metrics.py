"""spam_metrics computes scikit-learn's binary precision/recall/F1 and average precision with numpy alone."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, average_precision_score, precision_recall_fscore_support

from modelops.text.metrics import spam_metrics


@pytest.mark.parametrize("seed", range(40))
def test_spam_metrics_equal_scikit_learn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 80))
    labels = rng.integers(0, 2, n)
    probs = np.round(rng.random(n), int(rng.integers(1, 3)))  # rounded: tied scores, as real models give

    metrics = spam_metrics(labels.tolist(), probs)

    pred = (probs >= 0.5).astype(int)
    precision, recall, f1, _ = precision_recall_fscore_support(
        labels, pred, average="binary", pos_label=1, zero_division=0
    )
    assert metrics["precision"] == pytest.approx(precision, abs=1e-12)
    assert metrics["recall"] == pytest.approx(recall, abs=1e-12)
    assert metrics["f1"] == pytest.approx(f1, abs=1e-12)
    assert metrics["accuracy"] == pytest.approx(accuracy_score(labels, pred), abs=1e-12)
    if 0 < labels.sum() < n:
        assert metrics["pr_auc"] == pytest.approx(average_precision_score(labels, probs), abs=1e-12)
    else:
        assert np.isnan(metrics["pr_auc"])


def test_no_predicted_spam_scores_zero_precision_not_an_error() -> None:
    metrics = spam_metrics([1, 0, 1], np.array([0.1, 0.2, 0.3]))
    assert (metrics["precision"], metrics["recall"], metrics["f1"]) == (0.0, 0.0, 0.0)
