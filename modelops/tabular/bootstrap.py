"""Bootstrap training of the link, behaviour and fusion models on synthetic social context
joined to the real SMS texts (see ``synthetic``), written as one artifact version (``artifacts``).

Leakage control, split by split (the SMS train/validation/test split of ``modelops.text.data``,
the same one the text model uses):

- link and behaviour models: trained on the train-split rows, early-stopped on the
  validation-split rows, evaluated on the test-split rows;
- fusion model: trained on the validation-split rows only (plus as many uncertain-text rows
  copying their contexts, ``uncertain_text``). Its ``text_prob``/``preview_prob``
  come from a text model trained on the train split (never on these texts); its ``link_prob``/
  ``behaviour_prob`` are cross-fitted: the validation texts are cut into 5 folds and each fold is
  scored by a link/behaviour model trained on every other row (train split + the other folds)
  with the final model's tree count. The number of fusion trees comes from 5-fold CV on those
  rows;
- everything is evaluated on the test-split rows, with the final link/behaviour models and the
  text model's test probabilities: exactly what serving computes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from contracts.feature_schema import FUSION_FEATURES
from modelops.calibration import calibrate_booster, prob_to_margin
from modelops.tabular import artifacts
from modelops.tabular.card import render_card
from modelops.tabular.response import TEXT_GRID, neutral_response
from modelops.tabular.synthetic import describe_distributions, generate
from modelops.tabular.text_probs import TextProbabilities
from modelops.tabular.train import (
    TrainedModel,
    cross_fit_predict,
    evaluate,
    explain,
    train_behaviour_model,
    train_fusion_model,
    train_link_model,
)
from modelops.tabular.uncertain_text import UNCERTAIN_TEXT_SHARE, uncertain_text_rows

__all__ = ["BootstrapConfig", "BootstrapResult", "SplitLike", "fusion_frame", "run_bootstrap"]


class SplitLike(Protocol):
    @property
    def texts(self) -> list[str]: ...

    @property
    def labels(self) -> list[int]: ...


@dataclass(frozen=True)
class BootstrapConfig:
    seed: int = 7
    contexts_per_text: int = 2
    cross_fit_folds: int = 5
    threshold: float = 0.5
    uncertain_text_share: float = UNCERTAIN_TEXT_SHARE  # see modelops.tabular.uncertain_text


@dataclass
class BootstrapResult:
    version_dir: Path
    metrics: dict[str, Any]
    models: dict[str, TrainedModel]


def fusion_frame(
    frame: pd.DataFrame, text_probs: np.ndarray, link_prob: np.ndarray, behaviour_prob: np.ndarray
) -> pd.DataFrame:
    """FUSION_FEATURES for the rows of a synthetic frame; ``text_probs`` is indexed by text."""
    preview = frame["preview_index"].to_numpy()
    out = pd.DataFrame(
        {
            "text_prob": text_probs[frame["text_index"].to_numpy()],
            "preview_prob": np.where(preview >= 0, text_probs[np.maximum(preview, 0)], -1.0),
            "link_prob": link_prob,
            "behaviour_prob": behaviour_prob,
            "url_present": frame["url_present"].to_numpy(),
            "report_count": frame["report_count"].to_numpy(),
            "user_age_days": frame["user_age_days"].to_numpy(),
            "domain_report_count": frame["domain_report_count"].to_numpy(),
            "campaign_size": frame["campaign_size"].to_numpy(),
            "campaign_authors": frame["campaign_authors"].to_numpy(),
        },
        index=frame.index,
    )
    return out[list(FUSION_FEATURES)]


def _importance(model: TrainedModel, rows: pd.DataFrame, k: int = 8) -> list[dict[str, float | str]]:
    contrib = np.abs(explain(model, rows).contributions).mean(axis=0)
    order = np.argsort(-contrib)[:k]
    return [{"feature": model.feature_names[i], "mean_abs_contribution": round(float(contrib[i]), 4)} for i in order]


def _split_summary(frame: pd.DataFrame) -> dict[str, Any]:
    return {
        "rows": len(frame),
        "texts": int(frame["text_index"].nunique()),
        "spam_rows": int(frame["label"].sum()),
        "rows_with_url": int(frame["url_present"].sum()),
        "rows_with_preview": int((frame["preview_index"] >= 0).sum()),
        "archetypes": {str(k): int(v) for k, v in frame["archetype"].value_counts().sort_index().items()},
    }


def run_bootstrap(
    *,
    train: SplitLike,
    validation: SplitLike,
    test: SplitLike,
    text_probabilities: TextProbabilities,
    out_root: Path,
    config: BootstrapConfig = BootstrapConfig(),
    version: str | None = None,
    sms_summary: dict[str, Any] | None = None,
    make_current: bool = True,
    log: Callable[[str], None] = print,
) -> BootstrapResult:
    started = time.monotonic()
    seed, cpt = config.seed, config.contexts_per_text
    frames = {
        name: generate(split.texts, split.labels, seed=seed * 1000 + offset, contexts_per_text=cpt)
        for offset, (name, split) in enumerate((("train", train), ("validation", validation), ("test", test)))
    }
    tr, va, te = frames["train"], frames["validation"], frames["test"]
    log(f"synthetic contexts: train {len(tr)} rows, validation {len(va)}, test {len(te)}")

    link = train_link_model(tr, tr["label"], x_val=va, y_val=va["label"], seed=seed)
    behaviour = train_behaviour_model(tr, tr["label"], x_val=va, y_val=va["label"], seed=seed)
    log(f"link model: {link.num_trees} trees; behaviour model: {behaviour.num_trees} trees")

    # Platt calibrators on the validation rows, folded into the boosters; the cross-fitted
    # probabilities below go through the same map, so the fusion tree learns from what is served.
    calibration: dict[str, Any] = {}
    maps = {}
    for model in (link, behaviour):
        model.booster, calibration[model.kind], maps[model.kind] = calibrate_booster(
            model.booster,
            va[list(model.feature_names)].to_numpy(dtype=np.float32),
            va["label"].to_numpy(),
            model.feature_names,
            test=(te[list(model.feature_names)].to_numpy(dtype=np.float32), te["label"].to_numpy()),
        )
    # Cross-fitted link/behaviour probabilities for the fusion tree's training rows.
    both = pd.concat([tr, va], ignore_index=True)
    groups = np.concatenate([tr["text_index"].to_numpy() + len(va) + 1, va["text_index"].to_numpy()])
    mask = np.concatenate([np.zeros(len(tr), dtype=bool), np.ones(len(va), dtype=bool)])
    oof = {
        model.kind: maps[model.kind](
            cross_fit_predict(
                model.kind,
                both,
                both["label"],
                groups=groups.tolist(),
                predict_mask=mask.tolist(),
                rounds=model.num_trees,
                folds=config.cross_fit_folds,
                seed=seed,
            )[mask]
        )
        for model in (link, behaviour)
    }

    text_started = time.monotonic()
    val_text = text_probabilities.predict_proba(validation.texts)
    test_text = text_probabilities.predict_proba(test.texts)
    text_seconds = time.monotonic() - text_started
    log(f"text probabilities ({text_probabilities.kind}) for {len(val_text) + len(test_text)} texts")

    fusion_real = fusion_frame(va, val_text, oof["link"], oof["behaviour"])
    uncertain = uncertain_text_rows(
        fusion_real, va["label"].to_numpy(), va["text_index"].to_numpy(), seed=seed, share=config.uncertain_text_share
    )
    fusion_train = pd.concat([fusion_real, uncertain.rows], ignore_index=True)
    fusion_labels = np.concatenate([va["label"].to_numpy(), uncertain.labels])
    fusion_groups = np.concatenate([va["text_index"].to_numpy(), uncertain.groups])
    fusion = train_fusion_model(fusion_train, fusion_labels, seed=seed)
    fusion_test = fusion_frame(te, test_text, link.predict_proba(te), behaviour.predict_proba(te))
    # The fusion tree is trained on the validation rows, so its calibrator is fitted on its
    # out-of-fold predictions of those rows (folds grouped by text).
    fusion_oof = cross_fit_predict(
        "fusion",
        fusion_train,
        fusion_labels,
        groups=fusion_groups.tolist(),
        predict_mask=[True] * len(fusion_train),
        rounds=fusion.num_trees,
        folds=config.cross_fit_folds,
        seed=seed,
    )
    fusion_names = list(fusion.feature_names)
    fusion.booster, calibration["fusion"], _ = calibrate_booster(
        fusion.booster,
        fusion_train[fusion_names].to_numpy(dtype=np.float32),
        fusion_labels,
        fusion.feature_names,
        val_margin=prob_to_margin(fusion_oof),
        test=(fusion_test[fusion_names].to_numpy(dtype=np.float32), te["label"].to_numpy()),
    )
    final = fusion.predict_proba(fusion_test)
    response = neutral_response({"link": link, "behaviour": behaviour, "fusion": fusion})
    log(f"fusion model: {fusion.num_trees} trees ({fusion.stopping})")

    threshold = config.threshold
    y_test, y_val = te["label"].to_numpy(), va["label"].to_numpy()
    has_url = te["url_present"].to_numpy() > 0
    metrics: dict[str, Any] = {
        "version": version,
        "synthetic_context": True,
        "note": "Every number except text_only comes from synthetic social context joined to real SMS texts.",
        "test": {
            "fusion": evaluate(y_test, final, threshold),
            "text_only": evaluate(y_test, fusion_test["text_prob"], threshold),
            "link": evaluate(y_test, fusion_test["link_prob"], threshold),
            "link_rows_with_url": evaluate(y_test[has_url], fusion_test["link_prob"][has_url], threshold),
            "behaviour": evaluate(y_test, fusion_test["behaviour_prob"], threshold),
            "fusion_rows_with_url": evaluate(y_test[has_url], final[has_url], threshold),
        },
        "validation": {
            "link": evaluate(y_val, link.predict_proba(va), threshold),
            "behaviour": evaluate(y_val, behaviour.predict_proba(va), threshold),
            "link_cross_fitted": evaluate(y_val, oof["link"], threshold),
            "behaviour_cross_fitted": evaluate(y_val, oof["behaviour"], threshold),
            "text_only": evaluate(y_val, fusion_real["text_prob"], threshold),
        },
        "importance_test": {
            "link": _importance(link, te),
            "behaviour": _importance(behaviour, te),
            "fusion": _importance(fusion, fusion_test),
        },
        "neutral_response": {"text": list(TEXT_GRID), "final": [round(float(v), 4) for v in response]},
        "models": {m.kind: m.describe() for m in (link, behaviour, fusion)},
        "text_probabilities": text_probabilities.describe(),
        "data": {
            "sms": sms_summary or {},
            "contexts_per_text": cpt,
            "seed": seed,
            "cross_fit_folds": config.cross_fit_folds,
            "uncertain_text_rows": len(uncertain.rows),
            "splits": {name: _split_summary(frame) for name, frame in frames.items()},
        },
        "timing_s": {"text_probabilities": round(text_seconds, 2)},
        "calibration": calibration,
    }
    version = version or artifacts.new_version()
    metrics["version"] = version
    metrics["timing_s"]["total"] = round(time.monotonic() - started, 2)
    models = {"link": link, "behaviour": behaviour, "fusion": fusion}
    version_dir = Path(out_root) / version
    artifacts.write_bundle(
        version_dir,
        models=models,
        metrics=metrics,
        card=render_card(metrics, describe_distributions()),
        text_probabilities=text_probabilities.describe(),
        data=metrics["data"],
        threshold=threshold,
    )
    if make_current:
        artifacts.set_current(Path(out_root), version_dir)
    log(f"wrote {version_dir} in {metrics['timing_s']['total']} s")
    return BootstrapResult(version_dir=version_dir, metrics=metrics, models=models)
