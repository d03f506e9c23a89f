"""Adapting the served text score to a platform's labels, with the transformer left as it is.

The served text score is a blend: (1 - w) x transformer + w x lexical half, per model input, then
the maximum over a text's inputs (modelops.text.inference). On a platform's own kind of content
the transformer may be wrong in a way no label can change between full retrainings, while the
lexical half (modelops.text.baseline) is refitted in seconds. Two choices decide how much the
labels can teach, and neither has one right value for every platform, so both are chosen on the
labels' own validation split:

- how much a label weighs against the replayed bootstrap texts (LABEL_MULTIPLIERS, times the
  origin weights of settings.FEEDBACK_REPLAY_WEIGHTS): a few hundred labels among thousands of
  replayed SMS texts barely move the regularised weights of words the SMS texts never used;
- the blend weight w (LEXICAL_WEIGHTS): where the transformer does not know the content, the
  lexical half has to carry the score.

The choice minimises the log loss of the served score on the labels' validation split, among the
candidates whose F1 at 0.5 on the replayed validation texts (what the bootstrap learned) stays
within REPLAY_F1_TOLERANCE of the served score's. Log loss, not F1: with tens of validation labels
F1 at one threshold moves in steps of one post, while the policy acts at every threshold. With
fewer than MIN_LABEL_VALIDATION validation labels, or only one class among them, nothing is
chosen from them: labels weigh as replayed texts do, the served weight is kept, and C is chosen
on every validation text, as a retraining run does.

Hand-written: the search is a dozen fits of baseline's own pipeline; scikit-learn's model
selection cannot score a blend with a second model's fixed outputs under a side constraint.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from modelops.text.baseline import C_GRID, BaselineResult, fit_lexical
from modelops.text.metrics import spam_metrics

LABEL_MULTIPLIERS = (1.0, 3.0, 10.0)
LEXICAL_WEIGHTS = (0.3, 0.5, 0.7, 0.85)
MIN_LABEL_VALIDATION = 20
REPLAY_F1_TOLERANCE = 0.01
_EPS = 1e-6

__all__ = [
    "AdaptedText",
    "Example",
    "TransformerRows",
    "fit_adapted_text",
    "served_blend",
]


@dataclass(frozen=True)
class Example:
    text: str
    label: int  # 1: a violation
    weight: float = 1.0
    is_label: bool = False  # a reviewer's label (False: a replayed bootstrap text)


@dataclass(frozen=True)
class TransformerRows:
    """The transformer's side of some texts' served scores: per model input, the text it
    belongs to, the transformer's probability, and the words the lexical half reads for it."""

    owners: np.ndarray
    probs: np.ndarray
    texts: list[str] = field(default_factory=list)
    count: int = 0  # texts


TransformerScorer = Callable[[Sequence[str]], TransformerRows]


@dataclass(frozen=True)
class AdaptedText:
    lexical: BaselineResult
    lexical_weight: float
    label_multiplier: float
    report: dict[str, Any]


def served_blend(rows: TransformerRows, lexical: np.ndarray, weight: float) -> np.ndarray:
    """Per text: the maximum over its inputs of the blend, as spam_pipeline serves it."""
    blended = (1.0 - weight) * rows.probs + weight * np.asarray(lexical, dtype=np.float64)
    out = np.full(rows.count, -np.inf)
    np.maximum.at(out, rows.owners, blended)
    return out


def _log_loss(labels: np.ndarray, probs: np.ndarray) -> float:
    p = np.clip(probs, _EPS, 1.0 - _EPS)
    return float(-np.mean(labels * np.log(p) + (1 - labels) * np.log(1.0 - p)))


def _lexical_only(texts: Sequence[str]) -> TransformerRows:
    """Without a transformer, each text is its own input and the lexical half is the score."""
    return TransformerRows(np.arange(len(texts)), np.zeros(len(texts)), list(texts), len(texts))


def fit_adapted_text(
    *,
    train: Sequence[Example],
    replay_validation: Sequence[tuple[str, int]],
    label_validation: Sequence[tuple[str, int]],
    transformer: TransformerScorer | None,
    served_lexical: Any | None,
    served_weight: float,
) -> AdaptedText:
    """The lexical half and blend weight with the lowest label-validation log loss that keep the
    replayed validation texts' F1 (module docstring). `served_lexical`: the served lexical
    pipeline, the reference for the replay F1 (None: the transformer alone is)."""
    texts = [e.text for e in train]
    labels = [int(e.label) for e in train]
    replay_texts, replay_y = [t for t, _ in replay_validation], np.asarray([y for _, y in replay_validation])
    label_texts, label_y = [t for t, _ in label_validation], np.asarray([y for _, y in label_validation])
    score = transformer or _lexical_only
    replay_rows, label_rows = score(replay_texts), score(label_texts)
    weights = LEXICAL_WEIGHTS if transformer is not None else (1.0,)
    informed = len(label_y) >= MIN_LABEL_VALIDATION and 0 < int(label_y.sum()) < len(label_y)

    reference_weight = served_weight if transformer is not None else 1.0
    reference_lexical = (
        np.asarray(served_lexical.predict_proba(replay_rows.texts)[:, 1])
        if served_lexical is not None
        else np.zeros(len(replay_rows.texts))
    )
    reference_f1 = spam_metrics(
        replay_y.tolist(),
        served_blend(replay_rows, reference_lexical, reference_weight if served_lexical is not None else 0.0),
    )["f1"]

    candidates: list[dict[str, Any]] = []
    best: tuple[float, BaselineResult, float, float] | None = None
    multipliers = LABEL_MULTIPLIERS if informed else (1.0,)
    for multiplier, c in itertools.product(multipliers, C_GRID):
        sample_weights = [e.weight * (multiplier if e.is_label else 1.0) for e in train]
        pipeline = fit_lexical(texts, labels, c=c, train_weights=sample_weights)
        replay_lexical = np.asarray(pipeline.predict_proba(replay_rows.texts)[:, 1])
        label_lexical = np.asarray(pipeline.predict_proba(label_rows.texts)[:, 1]) if label_rows.texts else None
        for weight in weights if informed else (reference_weight,):
            replay_f1 = spam_metrics(replay_y.tolist(), served_blend(replay_rows, replay_lexical, weight))["f1"]
            entry: dict[str, Any] = {"multiplier": multiplier, "c": c, "weight": weight, "replay_f1": replay_f1}
            if informed and label_lexical is not None:
                label_probs = served_blend(label_rows, label_lexical, weight)
                entry["label_log_loss"] = _log_loss(label_y, label_probs)
                entry["label_f1"] = spam_metrics(label_y.tolist(), label_probs)["f1"]
                keeps = replay_f1 >= reference_f1 - REPLAY_F1_TOLERANCE
                objective = entry["label_log_loss"] if keeps else np.inf
            else:
                # Too few validation labels to choose from: every validation text's F1, as a
                # retraining run chooses C (the objective is minimised).
                every = np.concatenate([replay_y, label_y]) if len(label_y) else replay_y
                probs = served_blend(replay_rows, replay_lexical, weight)
                if label_lexical is not None:
                    probs = np.concatenate([probs, served_blend(label_rows, label_lexical, weight)])
                objective = -spam_metrics(every.tolist(), probs)["f1"]
            entry["objective"] = objective
            candidates.append(entry)
            if best is None or objective < best[0]:
                validation = spam_metrics(replay_y.tolist(), served_blend(replay_rows, replay_lexical, weight))
                best = (objective, BaselineResult(pipeline=pipeline, c=c, validation=validation), weight, multiplier)
    if best is None or not np.isfinite(best[0]):
        # No candidate keeps the replayed texts' F1: the one that loses least of it.
        top = max(candidates, key=lambda e: (e["replay_f1"], -e.get("label_log_loss", 0.0)))
        sample_weights = [e.weight * (top["multiplier"] if e.is_label else 1.0) for e in train]
        pipeline = fit_lexical(texts, labels, c=top["c"], train_weights=sample_weights)
        validation = spam_metrics(
            replay_y.tolist(),
            served_blend(replay_rows, np.asarray(pipeline.predict_proba(replay_rows.texts)[:, 1]), top["weight"]),
        )
        best = (
            np.inf,
            BaselineResult(pipeline=pipeline, c=top["c"], validation=validation),
            top["weight"],
            top["multiplier"],
        )
    _, lexical, weight, multiplier = best
    report = {
        "chosen": {"lexical_weight": weight, "label_multiplier": multiplier, "c": lexical.c},
        "from_labels": informed,
        "label_validation": len(label_y),
        "replay_validation": len(replay_y),
        "replay_f1_reference": round(reference_f1, 4),
        "candidates": [
            {k: (round(v, 4) if np.isfinite(v) else None) if isinstance(v, float) else v for k, v in e.items()}
            for e in candidates
        ],
    }
    return AdaptedText(lexical=lexical, lexical_weight=weight, label_multiplier=multiplier, report=report)
