"""Candidate feature models (link, behaviour) and fusion tree from a dataset's frozen rows,
and predictions of any set of boosters on the same rows (so production and candidate are
scored identically).

Stacking: the fusion tree is trained on out-of-fold link/behaviour probabilities of the train
split (K folds), never on in-sample predictions, which would teach it to trust over-fitted
sub-models. Text and preview probabilities are the frozen sub-scores of the example: a tabular
retrain keeps the production text model, so that is exactly what the fusion tree will see.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xgboost as xgb

from scoring.feature_schema import BEHAVIOUR_FEATURES, FUSION_FEATURES, LINK_FEATURES

KINDS: dict[str, tuple[str, ...]] = {"link": LINK_FEATURES, "behaviour": BEHAVIOUR_FEATURES}
PARAMS: dict[str, Any] = {
    "objective": "binary:logistic",
    "eval_metric": "logloss",
    "max_depth": 4,
    "eta": 0.1,
    "subsample": 0.9,
    "min_child_weight": 1.0,
    "nthread": 1,
    "seed": 7,
}
ROUNDS = 200
EARLY_STOPPING = 20
OOF_FOLDS = 4


def flat_features(features: Mapping[str, Any]) -> dict[str, float]:
    """Score.features is {"link": {...}, "behaviour": {...}, ...extras}; flat dicts are accepted too."""
    out: dict[str, float] = {}
    for key, value in features.items():
        if isinstance(value, Mapping):
            out.update({k: float(v) for k, v in value.items() if isinstance(v, int | float)})
        elif isinstance(value, int | float):
            out[key] = float(value)
    return out


def usable(row: Mapping[str, Any]) -> bool:
    """A row can train the tabular models when it has every feature and a frozen text score."""
    flat = flat_features(row.get("features") or {})
    return all(n in flat for n in (*LINK_FEATURES, *BEHAVIOUR_FEATURES)) and "text" in (row.get("sub_scores") or {})


def matrix(rows: Sequence[Mapping[str, Any]], names: tuple[str, ...]) -> np.ndarray:
    flats = [flat_features(r["features"]) for r in rows]
    return np.asarray([[f[n] for n in names] for f in flats], dtype=np.float32).reshape(len(rows), len(names))


def fusion_matrix(
    rows: Sequence[Mapping[str, Any]], *, link_prob: np.ndarray, behaviour_prob: np.ndarray, text_prob: np.ndarray
) -> np.ndarray:
    out = np.zeros((len(rows), len(FUSION_FEATURES)), dtype=np.float32)
    for i, row in enumerate(rows):
        flat = flat_features(row["features"])
        preview = (row.get("sub_scores") or {}).get("preview")
        values = {
            "text_prob": float(text_prob[i]),
            "preview_prob": -1.0 if preview is None else float(preview),
            "link_prob": float(link_prob[i]),
            "behaviour_prob": float(behaviour_prob[i]),
            "url_present": flat.get("url_present", 0.0),
            "report_count": flat.get("report_count", 0.0),
            "user_age_days": flat.get("user_age_days", 0.0),
            "domain_report_count": flat.get("domain_report_count", 0.0),
        }
        out[i] = [values[n] for n in FUSION_FEATURES]
    return out


def labels_of(rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
    return np.asarray([1 if r["label"] == "spam" else 0 for r in rows], dtype=np.float32)


def frozen_text_prob(rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
    return np.asarray([float(r["sub_scores"]["text"]) for r in rows], dtype=np.float32)


def train_booster(
    x: np.ndarray,
    y: np.ndarray,
    names: tuple[str, ...],
    *,
    x_val: np.ndarray | None = None,
    y_val: np.ndarray | None = None,
) -> xgb.Booster:
    dtrain = xgb.DMatrix(x, label=y, feature_names=list(names))
    params = dict(PARAMS)
    positives = float(y.sum())
    if 0 < positives < len(y):
        params["base_score"] = positives / len(y)
    if x_val is not None and y_val is not None and len(y_val) and 0 < y_val.sum() < len(y_val):
        dval = xgb.DMatrix(x_val, label=y_val, feature_names=list(names))
        return xgb.train(
            params,
            dtrain,
            ROUNDS,
            evals=[(dval, "validation")],
            early_stopping_rounds=EARLY_STOPPING,
            verbose_eval=False,
        )
    return xgb.train(params, dtrain, ROUNDS // 2, verbose_eval=False)


def predict(booster: xgb.Booster, x: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    dmatrix = xgb.DMatrix(x, feature_names=list(names))
    best = booster.attr("best_iteration")
    if best is not None:
        return booster.predict(dmatrix, iteration_range=(0, int(best) + 1)).astype(np.float64)
    return booster.predict(dmatrix).astype(np.float64)


def _out_of_fold(rows: Sequence[Mapping[str, Any]], kind: str, y: np.ndarray) -> np.ndarray:
    names = KINDS[kind]
    x = matrix(rows, names)
    oof = np.zeros(len(rows), dtype=np.float64)
    folds = np.arange(len(rows)) % OOF_FOLDS
    for k in range(OOF_FOLDS):
        train, hold = folds != k, folds == k
        if not hold.any() or len(np.unique(y[train])) < 2:
            oof[hold] = float(y[train].mean()) if train.any() else 0.5
            continue
        oof[hold] = predict(train_booster(x[train], y[train], names), x[hold], names)
    return oof


@dataclass
class TabularModels:
    link: xgb.Booster
    behaviour: xgb.Booster
    fusion: xgb.Booster

    def save(self, directory: Path) -> dict[str, str]:
        """Writes link.json, behaviour.json and fusion.json: the layout model_repository.publish reads."""
        directory.mkdir(parents=True, exist_ok=True)
        out = {}
        for kind in ("link", "behaviour", "fusion"):
            booster: xgb.Booster = getattr(self, kind)
            best = booster.attr("best_iteration")
            if best is not None:
                # Serve exactly the trees that were evaluated: drop rounds after early stopping.
                booster = booster[: int(best) + 1]
            path = directory / f"{kind}.json"
            booster.save_model(str(path))
            out[kind] = path.name
        return out

    @classmethod
    def load(cls, files: Mapping[str, Path]) -> TabularModels:
        return cls(**{kind: xgb.Booster(model_file=str(files[kind])) for kind in ("link", "behaviour", "fusion")})


def train_tabular(
    train_rows: Sequence[Mapping[str, Any]],
    validation_rows: Sequence[Mapping[str, Any]],
    *,
    progress: Callable[[float, str], None] | None = None,
) -> TabularModels:
    y, y_val = labels_of(train_rows), labels_of(validation_rows)
    if len(np.unique(y)) < 2:
        raise ValueError(f"the train split needs both spam and ham rows with features (has {len(y)} rows)")
    boosters: dict[str, xgb.Booster] = {}
    oof: dict[str, np.ndarray] = {}
    val_prob: dict[str, np.ndarray] = {}
    for i, kind in enumerate(("link", "behaviour")):
        names = KINDS[kind]
        if progress:
            progress(0.1 + 0.3 * i, f"training the {kind} model")
        x_val = matrix(validation_rows, names) if validation_rows else None
        boosters[kind] = train_booster(matrix(train_rows, names), y, names, x_val=x_val, y_val=y_val)
        oof[kind] = _out_of_fold(train_rows, kind, y)
        val_prob[kind] = predict(boosters[kind], x_val, names) if x_val is not None else np.zeros(0)
    if progress:
        progress(0.7, "training the fusion tree on out-of-fold sub-model probabilities")
    x_fusion = fusion_matrix(
        train_rows, link_prob=oof["link"], behaviour_prob=oof["behaviour"], text_prob=frozen_text_prob(train_rows)
    )
    x_fusion_val = (
        fusion_matrix(
            validation_rows,
            link_prob=val_prob["link"],
            behaviour_prob=val_prob["behaviour"],
            text_prob=frozen_text_prob(validation_rows),
        )
        if validation_rows
        else None
    )
    fusion = train_booster(x_fusion, y, FUSION_FEATURES, x_val=x_fusion_val, y_val=y_val)
    return TabularModels(link=boosters["link"], behaviour=boosters["behaviour"], fusion=fusion)


def predict_final(
    models: TabularModels, rows: Sequence[Mapping[str, Any]], *, text_prob: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Sub-model and final probabilities of `models` on `rows` (text from `text_prob` or frozen)."""
    link = predict(models.link, matrix(rows, LINK_FEATURES), LINK_FEATURES)
    behaviour = predict(models.behaviour, matrix(rows, BEHAVIOUR_FEATURES), BEHAVIOUR_FEATURES)
    text = frozen_text_prob(rows) if text_prob is None else text_prob
    x = fusion_matrix(rows, link_prob=link, behaviour_prob=behaviour, text_prob=text)
    return {"link": link, "behaviour": behaviour, "final": predict(models.fusion, x, FUSION_FEATURES)}


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True))
