"""Candidate feature models (link, behaviour) and fusion tree from a dataset's frozen rows,
and predictions of any set of boosters on the same rows (so production and candidate are
scored identically).

Stacking: the fusion tree is trained on cross-fitted link/behaviour probabilities of the train
split (K author-grouped folds), never on in-sample predictions, which would teach it to trust over-fitted
sub-models. Text and preview probabilities are the frozen sub-scores of the example: a tabular
retrain keeps the production text model, so that is exactly what the fusion tree will see.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xgboost as xgb

from contracts.feature_schema import BEHAVIOUR_FEATURES, FUSION_FEATURES, LINK_FEATURES
from modelops.calibration import calibrate_booster
from modelops.tabular.train import (
    TrainedModel,
    cross_fit_predict,
    train_behaviour_model,
    train_fusion_model,
    train_link_model,
)

KINDS: dict[str, tuple[str, ...]] = {"link": LINK_FEATURES, "behaviour": BEHAVIOUR_FEATURES}
OOF_FOLDS = 4
# Early stopping on log-loss, not on PR-AUC (the trainers' default): reviewer-labelled sets are
# small and often separable, PR-AUC reaches 1.0 after the first tree and stopping there leaves
# every probability near the base rate, which breaks the policy thresholds (seen here: F1 0 at
# 0.5 with PR-AUC 1.0). Log-loss keeps improving while the probabilities become calibrated.
RETRAIN_PARAMS: dict[str, Any] = {"eval_metric": ["aucpr", "logloss"]}


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
            "campaign_size": flat.get("campaign_size", 0.0),
            "campaign_authors": flat.get("campaign_authors", 0.0),
        }
        out[i] = [values[n] for n in FUSION_FEATURES]
    return out


def labels_of(rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
    return np.asarray([1 if r["label"] == "spam" else 0 for r in rows], dtype=np.float32)


def frozen_text_prob(rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
    return np.asarray([float(r["sub_scores"]["text"]) for r in rows], dtype=np.float32)


def predict(booster: xgb.Booster, x: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    dmatrix = xgb.DMatrix(x, feature_names=list(names))
    best = booster.attr("best_iteration")
    if best is not None:
        return booster.predict(dmatrix, iteration_range=(0, int(best) + 1)).astype(np.float64)
    return booster.predict(dmatrix).astype(np.float64)


def author_groups(rows: Sequence[Mapping[str, Any]]) -> list[int]:
    """One group per author (source + author id), so cross-fitting never predicts a row with a
    model that saw the same author's other posts."""
    ids: dict[tuple[str, str], int] = {}
    out = []
    for row in rows:
        key = (str(row.get("source")), str(row.get("author_external_id") or f"#{row.get('example_id')}"))
        out.append(ids.setdefault(key, len(ids)))
    return out


@dataclass
class TabularModels:
    link: xgb.Booster
    behaviour: xgb.Booster
    fusion: xgb.Booster
    # Per model: the Platt calibrator folded into it and ECE before/after (modelops.calibration).
    calibration: dict[str, Any] = field(default_factory=dict)

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
        return cls(
            link=xgb.Booster(model_file=str(files["link"])),
            behaviour=xgb.Booster(model_file=str(files["behaviour"])),
            fusion=xgb.Booster(model_file=str(files["fusion"])),
        )


def _fit(
    trainer: Callable[..., TrainedModel],
    x: np.ndarray,
    y: np.ndarray,
    x_val: np.ndarray | None,
    y_val: np.ndarray,
    weights: np.ndarray | None = None,
) -> TrainedModel:
    if x_val is not None and len(np.unique(y_val)) == 2:
        return trainer(x, y, x_val=x_val, y_val=y_val, params=RETRAIN_PARAMS, weights=weights)
    return trainer(x, y, params=RETRAIN_PARAMS, weights=weights)


def _served_trees(booster: xgb.Booster) -> xgb.Booster:
    """Exactly the trees that are evaluated and served: rounds after early stopping dropped."""
    best = booster.attr("best_iteration")
    return booster[: int(best) + 1] if best is not None else booster


def train_tabular(
    train_rows: Sequence[Mapping[str, Any]],
    validation_rows: Sequence[Mapping[str, Any]],
    *,
    progress: Callable[[float, str], None] | None = None,
    weights: Sequence[float] | None = None,
) -> TabularModels:
    """The tabular trainers of modelops.tabular.train (the same ones the bootstrap uses, so a
    candidate differs from production by its data, not its recipe): link and behaviour models
    with early stopping on the validation split, cross-fitted (author-grouped) out-of-fold
    sub-model probabilities for the fusion tree's training rows. Each booster gets a Platt
    calibrator fitted on the validation rows and folded into it; the out-of-fold probabilities
    the fusion tree learns from go through the same calibrator, so it sees what is served.
    `weights`: optional per-row sample weights of the train rows."""
    y, y_val = labels_of(train_rows), labels_of(validation_rows)
    w = None if weights is None else np.asarray(weights, dtype=np.float32)
    if len(np.unique(y)) < 2:
        raise ValueError(f"the train split needs both spam and ham rows with features (has {len(y)} rows)")
    groups = author_groups(train_rows)
    trainers = {"link": train_link_model, "behaviour": train_behaviour_model}
    models: dict[str, TrainedModel] = {}
    served: dict[str, xgb.Booster] = {}
    calibration: dict[str, Any] = {}
    oof: dict[str, np.ndarray] = {}
    val_prob: dict[str, np.ndarray] = {}
    for i, kind in enumerate(("link", "behaviour")):
        names = KINDS[kind]
        if progress:
            progress(0.1 + 0.3 * i, f"training the {kind} model ({len(train_rows)} rows)")
        x = matrix(train_rows, names)
        x_val = matrix(validation_rows, names) if validation_rows else None
        models[kind] = _fit(trainers[kind], x, y, x_val, y_val, w)
        served[kind], calibration[kind], calibrate = calibrate_booster(models[kind].booster, x_val, y_val, names)
        oof[kind] = calibrate(
            cross_fit_predict(
                kind,
                x,
                y,
                groups=groups,
                predict_mask=[True] * len(train_rows),
                rounds=models[kind].num_trees,
                folds=OOF_FOLDS,
                params=RETRAIN_PARAMS,
                weights=w,
            )
        )
        val_prob[kind] = predict(served[kind], x_val, names) if x_val is not None else np.zeros(0)
    if progress:
        progress(0.7, "training the fusion tree on cross-fitted sub-model probabilities")
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
    fusion = _fit(train_fusion_model, x_fusion, y, x_fusion_val, y_val, w)
    served["fusion"], calibration["fusion"], _ = calibrate_booster(fusion.booster, x_fusion_val, y_val, FUSION_FEATURES)
    return TabularModels(
        link=served["link"], behaviour=served["behaviour"], fusion=served["fusion"], calibration=calibration
    )


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
