"""XGBoost trainers for the link, behaviour and fusion models (one model per angle, a
final tree ensemble over their outputs: docs/design.md).

The trainers take feature rows and labels and know nothing about where they came from, so the
bootstrap (synthetic contexts, ``modelops.tabular.bootstrap``) and the retraining from
reviewer-labelled posts (feedback app) call the same functions::

    model = train_behaviour_model(rows, labels)                 # rows: DataFrame / dicts / matrix
    model = train_link_model(x_train, y_train, x_val=x_val, y_val=y_val)
    model.predict_proba(rows); explain(model, rows); evaluate(labels, model.predict_proba(rows))

Early stopping: on ``x_val``/``y_val`` when given; otherwise the number of trees comes from a
stratified 5-fold ``xgb.cv`` on the training rows and the final model is fit on all of them;
with very little data (< ``MIN_ROWS_FOR_STOPPING`` rows or < 5 of a class) a fixed, small
number of trees is used. The saved model is cut at the best iteration, so serving needs no
``iteration_range``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xgboost as xgb
from sklearn.metrics import (
    accuracy_score,
    average_precision_score,
    f1_score,
    precision_score,
    recall_score,
    roc_auc_score,
)

from contracts.feature_schema import BEHAVIOUR_FEATURES, FUSION_FEATURES, LINK_FEATURES
from modelops.tabular.explain import Explanation, as_matrix, explain_booster

__all__ = [
    "DEFAULT_PARAMS",
    "FEATURES",
    "MONOTONE",
    "TrainedModel",
    "cross_fit_predict",
    "evaluate",
    "explain",
    "load_model",
    "train_behaviour_model",
    "train_fusion_model",
    "train_link_model",
    "train_model",
]

FEATURES: dict[str, tuple[str, ...]] = {
    "link": LINK_FEATURES,
    "behaviour": BEHAVIOUR_FEATURES,
    "fusion": FUSION_FEATURES,
}

DEFAULT_PARAMS: dict[str, Any] = {
    "objective": "binary:logistic",
    "eval_metric": ["logloss", "aucpr"],  # the last one drives early stopping
    "tree_method": "hist",
    "max_depth": 3,
    "eta": 0.1,
    "subsample": 0.9,
    "colsample_bytree": 0.9,
    "min_child_weight": 1.0,
    "lambda": 1.0,
    # One thread: the trees are tiny and the machine's cores are shared; more threads only
    # add contention.
    "nthread": 1,
}
PER_MODEL_PARAMS: dict[str, dict[str, Any]] = {
    "link": {"max_depth": 3},
    "behaviour": {"max_depth": 4},
    "fusion": {"max_depth": 2, "eta": 0.08},
}
# The fusion tree's direction per feature: +1 the score never falls as the feature grows, -1 it
# never rises, 0 free. Without these a tree over few examples may learn any step, e.g. that a
# higher text score lowers the final score somewhere in a range it saw no examples in.
MONOTONE: dict[str, dict[str, int]] = {
    "fusion": {
        # Sub-model spam probabilities: more confident of spam, never a lower final score.
        "text_prob": 1,
        "link_prob": 1,
        "behaviour_prob": 1,
        # Reports on the post and on its link's domain are evidence of spam, never of ham.
        "report_count": 1,
        "domain_report_count": 1,
        # A near-copy blast across more posts and more accounts is evidence of spam, never of ham.
        "campaign_size": 1,
        "campaign_authors": 1,
        # An older account is trust, and a missing or new one is no evidence of ham: the score
        # may only fall as the account ages (a platform that sends no account data gives 0).
        "user_age_days": -1,
        # Free: preview_prob's -1 ("no preview") must be allowed to sit between a clean and a
        # spammy preview, which one direction over the whole column cannot express.
        "preview_prob": 0,
        # Free: it says whether link_prob describes a link at all; the link's evidence is
        # link_prob itself.
        "url_present": 0,
    },
}
NUM_BOOST_ROUND = 400
EARLY_STOPPING_ROUNDS = 30
MIN_ROWS_FOR_STOPPING = 40
FIXED_ROUNDS = 40


@dataclass
class TrainedModel:
    kind: str  # "link" | "behaviour" | "fusion"
    booster: xgb.Booster
    feature_names: tuple[str, ...]
    num_trees: int
    stopping: str  # "validation" | "cv" | "fixed"
    params: dict[str, Any]

    def _dmatrix(self, rows: Any) -> xgb.DMatrix:
        return xgb.DMatrix(as_matrix(rows, self.feature_names), feature_names=list(self.feature_names))

    def predict_proba(self, rows: Any) -> np.ndarray:
        return np.asarray(self.booster.predict(self._dmatrix(rows)), dtype=np.float64)

    def predict_margin(self, rows: Any) -> np.ndarray:
        return np.asarray(self.booster.predict(self._dmatrix(rows), output_margin=True), dtype=np.float64)

    def save(self, path: Path) -> Path:
        """XGBoost JSON; feature names (and types) are stored inside the model."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.booster.save_model(str(path))
        return path

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "num_features": len(self.feature_names),
            "feature_names": list(self.feature_names),
            "num_trees": self.num_trees,
            "stopping": self.stopping,
            "params": {k: v for k, v in self.params.items() if k != "nthread"},
        }


def load_model(path: Path, kind: str | None = None) -> TrainedModel:
    booster = xgb.Booster()
    booster.load_model(str(path))
    kind = kind or path.stem
    names = tuple(booster.feature_names or FEATURES[kind])
    return TrainedModel(kind, booster, names, booster.num_boosted_rounds(), "loaded", {})


def _params(kind: str, names: Sequence[str], params: Mapping[str, Any] | None, seed: int) -> dict[str, Any]:
    merged: dict[str, Any] = {**DEFAULT_PARAMS, **PER_MODEL_PARAMS.get(kind, {}), "seed": seed}
    monotone = MONOTONE.get(kind)
    if monotone:
        merged["monotone_constraints"] = "(" + ",".join(str(monotone.get(n, 0)) for n in names) + ")"
    merged.update(params or {})
    return merged


def _labels(y: Any) -> np.ndarray:
    labels = np.asarray(y, dtype=np.float32).reshape(-1)
    if not np.isin(labels, (0.0, 1.0)).all():
        raise ValueError("labels must be 0 (ham) or 1 (spam)")
    return labels


def train_model(
    kind: str,
    x: Any,
    y: Any,
    *,
    x_val: Any = None,
    y_val: Any = None,
    feature_names: Sequence[str] | None = None,
    params: Mapping[str, Any] | None = None,
    num_boost_round: int = NUM_BOOST_ROUND,
    early_stopping_rounds: int = EARLY_STOPPING_ROUNDS,
    fixed_rounds: int | None = None,
    seed: int = 0,
    weights: Any = None,
) -> TrainedModel:
    """Train one binary:logistic booster over ``feature_names`` (default: the kind's schema list).

    ``fixed_rounds`` skips early stopping (used by cross-fitting, which reuses the tree count of
    the final model). ``weights``: optional per-row sample weights of the training rows
    (retraining weighs rows by where they came from)."""
    names = tuple(feature_names or FEATURES[kind])
    labels = _labels(y)
    matrix = as_matrix(x, names)
    if len(labels) != matrix.shape[0]:
        raise ValueError(f"{matrix.shape[0]} rows but {len(labels)} labels")
    if len(labels) == 0:
        raise ValueError("no training rows")
    merged = _params(kind, names, params, seed)
    weight = None if weights is None else np.asarray(weights, dtype=np.float32).reshape(-1)
    dtrain = xgb.DMatrix(matrix, label=labels, weight=weight, feature_names=list(names))
    minority = int(min(labels.sum(), len(labels) - labels.sum()))

    if fixed_rounds is not None:
        booster = xgb.train(merged, dtrain, num_boost_round=fixed_rounds)
        return TrainedModel(kind, booster, names, fixed_rounds, "fixed", merged)

    if x_val is not None and y_val is not None:
        val_labels = _labels(y_val)
        dval = xgb.DMatrix(as_matrix(x_val, names), label=val_labels, feature_names=list(names))
        if len(np.unique(val_labels)) == 2:
            booster = xgb.train(
                merged,
                dtrain,
                num_boost_round=num_boost_round,
                evals=[(dval, "validation")],
                early_stopping_rounds=early_stopping_rounds,
                verbose_eval=False,
            )
            best = int(booster.best_iteration) + 1
            return TrainedModel(kind, booster[:best], names, best, "validation", merged)

    if len(labels) >= MIN_ROWS_FOR_STOPPING and minority >= 5:
        history = xgb.cv(
            merged,
            dtrain,
            num_boost_round=num_boost_round,
            nfold=5,
            stratified=True,
            early_stopping_rounds=early_stopping_rounds,
            seed=seed,
            shuffle=True,
        )
        best = len(history)
        booster = xgb.train(merged, dtrain, num_boost_round=best)
        return TrainedModel(kind, booster, names, best, "cv", merged)

    booster = xgb.train(merged, dtrain, num_boost_round=FIXED_ROUNDS)
    return TrainedModel(kind, booster, names, FIXED_ROUNDS, "fixed", merged)


def train_link_model(x: Any, y: Any, **kwargs: Any) -> TrainedModel:
    """Link and IP model over ``LINK_FEATURES``."""
    return train_model("link", x, y, **kwargs)


def train_behaviour_model(x: Any, y: Any, **kwargs: Any) -> TrainedModel:
    """Social-behaviour model over ``BEHAVIOUR_FEATURES``."""
    return train_model("behaviour", x, y, **kwargs)


def train_fusion_model(x: Any, y: Any, **kwargs: Any) -> TrainedModel:
    """The final tree over ``FUSION_FEATURES`` (sub-model probabilities + raw signals).

    Its probability inputs must be out-of-sample (held-out text probabilities, cross-fitted
    link/behaviour probabilities), or the tree learns to trust over-confident in-sample scores."""
    return train_model("fusion", x, y, **kwargs)


def explain(model: TrainedModel, rows: Any) -> Explanation:
    """Per-feature contributions (pred_contribs) with feature names and bias, per row."""
    return explain_booster(model.booster, rows, model.feature_names)


def cross_fit_predict(
    kind: str,
    x: Any,
    y: Any,
    *,
    groups: Sequence[int],
    predict_mask: Sequence[bool],
    rounds: int,
    folds: int = 5,
    seed: int = 0,
    params: Mapping[str, Any] | None = None,
    weights: Any = None,
) -> np.ndarray:
    """Out-of-fold probabilities for the rows in ``predict_mask``.

    Those rows are split into ``folds`` by ``groups`` (all contexts of one text stay in one
    fold); each fold is predicted by a model trained on every other row (including the rows
    outside ``predict_mask``) with ``rounds`` trees. Rows outside the mask get NaN."""
    names = FEATURES[kind]
    matrix = as_matrix(x, names)
    labels = _labels(y)
    group_arr = np.asarray(groups)
    mask = np.asarray(predict_mask, dtype=bool)
    out = np.full(len(labels), np.nan)
    unique = np.unique(group_arr[mask])
    rng = np.random.default_rng(seed)
    fold_of = dict(zip(unique.tolist(), rng.permutation(len(unique)) % folds, strict=True))
    row_fold = np.array([fold_of.get(g, -1) if m else -1 for g, m in zip(group_arr.tolist(), mask, strict=True)])
    for k in range(folds):
        held = row_fold == k
        if not held.any():
            continue
        model = train_model(
            kind,
            matrix[~held],
            labels[~held],
            fixed_rounds=rounds,
            seed=seed + k,
            params=params,
            weights=None if weights is None else np.asarray(weights)[~held],
        )
        out[held] = model.predict_proba(matrix[held])
    return out


def evaluate(y_true: Any, prob: Any, threshold: float = 0.5) -> dict[str, float]:
    """Spam-class precision, recall, F1, accuracy at ``threshold``; PR-AUC (average precision)
    and ROC-AUC over the probabilities."""
    labels = np.asarray(y_true, dtype=int).reshape(-1)
    p = np.asarray(prob, dtype=float).reshape(-1)
    pred = (p >= threshold).astype(int)
    both = len(np.unique(labels)) == 2
    return {
        "n": len(labels),
        "positives": int(labels.sum()),
        "threshold": threshold,
        "precision": float(precision_score(labels, pred, zero_division=0)),
        "recall": float(recall_score(labels, pred, zero_division=0)),
        "f1": float(f1_score(labels, pred, zero_division=0)),
        "accuracy": float(accuracy_score(labels, pred)),
        "pr_auc": float(average_precision_score(labels, p)) if both else float("nan"),
        "roc_auc": float(roc_auc_score(labels, p)) if both else float("nan"),
        "tp": int(((pred == 1) & (labels == 1)).sum()),
        "fp": int(((pred == 1) & (labels == 0)).sum()),
        "fn": int(((pred == 0) & (labels == 1)).sum()),
        "tn": int(((pred == 0) & (labels == 0)).sum()),
    }
