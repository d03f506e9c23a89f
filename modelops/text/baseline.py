"""TF-IDF + logistic-regression baseline, trained on the same split as the transformer.

The terms are hashed (sklearn's HashingVectorizer, then TfidfTransformer): the fitted model
holds column numbers, their idf and weights, never a vocabulary of the words it was trained on,
so a model trained on posts keeps none of their text (an erased author's phone number or name
included) and is copied into every published version without it.

It is also the lexical half of the served text score: saved beside the transformer as
LEXICAL_FILE, its spam probability is blended with the transformer's (serving.json's
lexical_weight; modelops.text.inference and spam_pipeline compute the same blend). Out of
domain the transformer calls formal English spam far more often than word counts do
(benchmarks/out_of_domain.py: package documentation, 17 % vs 1.3 % at 0.5), while on the SMS
test split the blend keeps the transformer's F1."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import joblib
import numpy as np
from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from modelops.text.metrics import spam_metrics

C_GRID = (1.0, 10.0, 100.0)
# Hashed columns. The SMS training split has tens of thousands of distinct word 1-2 grams:
# at 2^18 columns about one in seven shares its column with another (SMS test F1 0.931); at
# 2^20 the F1 is the vocabulary model's (0.944), for a 17 MB file instead of 1 MB.
N_FEATURES = 2**20
LEXICAL_FILE = "lexical.joblib"
# Share of the lexical model in the served text score (0 = the transformer alone).
DEFAULT_LEXICAL_WEIGHT = 0.5


@dataclass(frozen=True)
class BaselineResult:
    pipeline: Pipeline
    c: float
    validation: dict[str, float]

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.pipeline.predict_proba(list(texts))[:, 1])

    def describe(self) -> str:
        return (
            f"hashed TF-IDF word 1-2 grams (2^{N_FEATURES.bit_length() - 1} columns, sublinear tf, lowercase) + "
            f"LogisticRegression(C={self.c:g}, liblinear)"
        )


def _pipeline(c: float) -> Pipeline:
    return Pipeline(
        [
            # alternate_sign=False, norm=None: raw counts, so the tf-idf step sees what
            # TfidfVectorizer would (sublinear tf, idf, then the L2 norm).
            (
                "hash",
                HashingVectorizer(
                    ngram_range=(1, 2), lowercase=True, n_features=N_FEATURES, alternate_sign=False, norm=None
                ),
            ),
            ("tfidf", TfidfTransformer(sublinear_tf=True)),
            ("lr", LogisticRegression(C=c, solver="liblinear", max_iter=1000)),
        ]
    )


def _without_unseen_columns(pipe: Pipeline, train_texts: Sequence[str]) -> Pipeline:
    """Give the columns no training text hashed to an idf of 0. TfidfVectorizer drops a word it
    never saw; hashed, that word would still get the largest idf and take a share of the L2 norm
    from the words the model knows, pulling every score towards the intercept (SMS test F1 0.89
    instead of 0.94). Training is unchanged: those columns are zero in every training row."""
    seen = np.asarray((pipe.named_steps["hash"].transform(list(train_texts)) > 0).sum(axis=0)).ravel() > 0
    tfidf = pipe.named_steps["tfidf"]
    tfidf.idf_ = np.where(seen, tfidf.idf_, 0.0)
    return pipe


def fit_lexical(
    train_texts: Sequence[str],
    train_labels: Sequence[int],
    *,
    c: float,
    train_weights: Sequence[float] | None = None,
) -> Pipeline:
    """One fitted lexical pipeline at regularisation C (None weights: all 1)."""
    fit_kw = {} if train_weights is None else {"lr__sample_weight": np.asarray(train_weights, dtype=np.float64)}
    return _without_unseen_columns(_pipeline(c).fit(list(train_texts), list(train_labels), **fit_kw), train_texts)


def train_baseline(
    train_texts: Sequence[str],
    train_labels: Sequence[int],
    val_texts: Sequence[str],
    val_labels: Sequence[int],
    *,
    train_weights: Sequence[float] | None = None,
) -> BaselineResult:
    """C is chosen on validation F1, as the transformer's epoch is. `train_weights`: one
    sample weight per training text (a retraining's replay weights), None: all 1."""
    best: BaselineResult | None = None
    for c in C_GRID:
        pipe = fit_lexical(train_texts, train_labels, c=c, train_weights=train_weights)
        metrics = spam_metrics(val_labels, pipe.predict_proba(list(val_texts))[:, 1])
        if best is None or metrics["f1"] > best.validation["f1"]:
            best = BaselineResult(pipeline=pipe, c=c, validation=metrics)
    assert best is not None
    return best


def save_lexical(result: BaselineResult, model_dir: Path) -> Path:
    """Write the fitted pipeline beside a text model (loaded by the pipeline and the evaluation)."""
    path = Path(model_dir) / LEXICAL_FILE
    joblib.dump(result.pipeline, path)
    return path


def load_lexical(model_dir: Path) -> Pipeline | None:
    """The text model's lexical pipeline, None when it has none. A joblib pickle: only files this
    project's own training wrote are loaded, from the artifact directory."""
    path = Path(model_dir) / LEXICAL_FILE
    if not path.is_file():
        return None
    pipeline: Pipeline = joblib.load(path)
    return pipeline


def blend(transformer: np.ndarray, lexical: np.ndarray, weight: float) -> np.ndarray:
    """The served text score: (1 - weight) x transformer + weight x lexical spam probability."""
    return np.asarray((1.0 - weight) * np.asarray(transformer, np.float64) + weight * np.asarray(lexical, np.float64))
