"""On-disk layout of the feature-model artifacts (the contract with Triton's publish step).

::

    <ARTIFACTS_DIR>/tabular/
        current -> 20261121T235959Z     relative symlink to the version to serve, swapped
                                        atomically; a plain file holding the version name is
                                        accepted too (``current_dir``)
        20261121T235959Z/               one directory per version (UTC time, or --version)
            link.json                   XGBoost JSON booster, objective binary:logistic
            behaviour.json              idem
            fusion.json                 idem
            feature_names.json          {"link": [...], "behaviour": [...], "fusion": [...]}
            manifest.json               see below
            metrics.json                evaluation on the SMS test split (+ training facts)
            MODEL_CARD.md               data, synthetic distributions, metrics, limitations

Each booster stores its feature names (``booster.feature_names`` after ``load_model``); they
equal ``LINK_FEATURES`` / ``BEHAVIOUR_FEATURES`` / ``FUSION_FEATURES`` of
``contracts.feature_schema`` at training time and ``feature_names.json``. Serving contract:

- input: float32 matrix, one row per post, columns in ``feature_names`` order;
- output: ``booster.predict(DMatrix(x, feature_names=names))`` = spam probability (sigmoid
  applied); contributions: ``predict(..., pred_contribs=True)`` -> (rows, features + 1), the last
  column is the bias; contributions + bias = ``output_margin`` (log-odds);
- boosters are already cut at their best iteration: predict with all trees;
- fusion inputs: ``text_prob`` (text model on the post text), ``preview_prob`` (text model on
  the link preview, -1 when the platform sent none), ``link_prob`` and ``behaviour_prob`` (the
  link and behaviour models' outputs; a post without a link still goes through the link model
  with ``feature_schema.NO_LINK_VALUES``), then raw signals.

``manifest.json``::

    {"format": 1, "version": "...", "created_at": "...Z",
     "models": {"link": {"file": "link.json", "feature_names": [...], "num_trees": 87,
                          "objective": "binary:logistic", "output": "spam_probability"}, ...},
     "text_probabilities": {"kind": "onnx" | "tfidf_fallback", ...},
     "threshold": 0.5, "data": {...}}
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from modelops import current
from modelops.current import CURRENT, set_current
from modelops.tabular.train import FEATURES, TrainedModel, load_model

__all__ = [
    "CURRENT",
    "MANIFEST",
    "METRICS",
    "MODEL_CARD",
    "MODEL_FILES",
    "current_dir",
    "load_bundle",
    "new_version",
    "read_manifest",
    "set_current",
    "write_bundle",
]

FORMAT = 1
MANIFEST = "manifest.json"
METRICS = "metrics.json"
MODEL_CARD = "MODEL_CARD.md"
FEATURE_NAMES = "feature_names.json"
MODEL_FILES: dict[str, str] = {"link": "link.json", "behaviour": "behaviour.json", "fusion": "fusion.json"}


def new_version() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def _dump(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")


def write_bundle(
    version_dir: Path,
    *,
    models: dict[str, TrainedModel],
    metrics: dict[str, Any],
    card: str,
    text_probabilities: dict[str, Any],
    data: dict[str, Any],
    threshold: float = 0.5,
) -> Path:
    """Write the three boosters, names, manifest, metrics and card into ``version_dir``."""
    if set(models) != set(MODEL_FILES):
        raise ValueError(f"expected models {sorted(MODEL_FILES)}, got {sorted(models)}")
    for kind, model in models.items():
        if model.feature_names != FEATURES[kind]:
            raise ValueError(f"{kind} model features differ from feature_schema")
    version_dir.mkdir(parents=True, exist_ok=True)
    for kind, model in models.items():
        model.save(version_dir / MODEL_FILES[kind])
    _dump(version_dir / FEATURE_NAMES, {kind: list(FEATURES[kind]) for kind in MODEL_FILES})
    _dump(
        version_dir / MANIFEST,
        {
            "format": FORMAT,
            "version": version_dir.name,
            "created_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            "models": {
                kind: {
                    "file": MODEL_FILES[kind],
                    "feature_names": list(models[kind].feature_names),
                    "num_trees": models[kind].num_trees,
                    "objective": "binary:logistic",
                    "output": "spam_probability",
                }
                for kind in MODEL_FILES
            },
            "text_probabilities": text_probabilities,
            "threshold": threshold,
            "data": data,
        },
    )
    _dump(version_dir / METRICS, metrics)
    (version_dir / MODEL_CARD).write_text(card, encoding="utf-8")
    return version_dir


def current_dir(root: Path) -> Path:
    """The version directory ``root/current`` names (modelops.current)."""
    return current.current_dir(root, missing=f"no current feature models under {root}; run train_feature_models")


def read_manifest(version_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(version_dir) / MANIFEST).read_text(encoding="utf-8"))
    return data


def load_bundle(version_dir: Path) -> dict[str, TrainedModel]:
    """The three models of a version directory, keyed link/behaviour/fusion."""
    return {kind: load_model(Path(version_dir) / name, kind) for kind, name in MODEL_FILES.items()}
