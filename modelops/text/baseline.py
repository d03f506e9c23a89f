"""TF-IDF + logistic-regression baseline, trained on the same split as the transformer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from modelops.text.metrics import spam_metrics

C_GRID = (1.0, 10.0, 100.0)


@dataclass(frozen=True)
class BaselineResult:
    pipeline: Pipeline
    c: float
    validation: dict[str, float]

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.pipeline.predict_proba(list(texts))[:, 1])

    def describe(self) -> str:
        return f"TF-IDF word 1-2 grams (sublinear tf, lowercase) + LogisticRegression(C={self.c:g}, liblinear)"


def _pipeline(c: float) -> Pipeline:
    return Pipeline(
        [
            ("tfidf", TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, lowercase=True, min_df=1)),
            ("lr", LogisticRegression(C=c, solver="liblinear", max_iter=1000)),
        ]
    )


def train_baseline(
    train_texts: Sequence[str],
    train_labels: Sequence[int],
    val_texts: Sequence[str],
    val_labels: Sequence[int],
) -> BaselineResult:
    """C is chosen on validation F1, as the transformer's epoch is."""
    best: BaselineResult | None = None
    for c in C_GRID:
        pipe = _pipeline(c).fit(list(train_texts), list(train_labels))
        metrics = spam_metrics(val_labels, pipe.predict_proba(list(val_texts))[:, 1])
        if best is None or metrics["f1"] > best.validation["f1"]:
            best = BaselineResult(pipeline=pipe, c=c, validation=metrics)
    assert best is not None
    return best
