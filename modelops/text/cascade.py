"""The text cascade: when the lexical half of the text score may stand in for the whole.

The served text score of one model input (a window) is the blend
``(1 - w) x transformer + w x lexical`` (modelops.text.baseline). The lexical half costs about
0.05 ms of CPU, the transformer about 3 ms. Where the lexical probability is already far enough
out, the transformer cannot move the blend across a decision threshold, so spam_pipeline skips
it and serves the lexical probability as the text score (at the extremes the blend tends to it:
both halves agree there).

The rule, per window with lexical probability ``p`` and per text:

- ``p < low``: the window is confidently ham;  ``p > high``: confidently spam.
- A text skips the transformer when any of its windows is confidently spam (the maximum over
  windows is then decided: at least ``high``) or every window is confidently ham. Its text
  score is the maximum lexical probability of its windows.
- Otherwise only its windows that are not confidently ham are classified; a confidently ham
  window counts with its lexical probability (it cannot be the one that decides the maximum).
- An unfamiliar text (unfamiliarity >= 1) or one without a familiarity measure never skips: the
  lexical model knows its words no better than the transformer does.

The bounds are fitted on the validation split (never the test split), at the default policy
thresholds, as the widest ones under which no validation window's decision (approve below the
approve threshold, remove at or above the remove threshold, queue between) differs between its
served blend and its lexical probability. They are stored in the text model's serving.json
under CASCADE_KEY; publish copies them into the bundle spam_pipeline reads
(settings.TEXT_CASCADE off leaves them out), and spam_pipeline's TEXT_CASCADE config parameter
can turn them off on a running server.

spam_pipeline applies the same rule (triton_repository/spam_pipeline/model.py, TextCascade);
tests/modelops/test_text_cascade.py holds the two together.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

# serving.json key of the fitted bounds.
CASCADE_KEY = "cascade"
# The policy's defaults (scoring.services.policy; this package imports no app).
DEFAULT_APPROVE_THRESHOLD = 0.2
DEFAULT_REMOVE_THRESHOLD = 0.9


@dataclass(frozen=True)
class CascadeBounds:
    low: float  # lexical probability below which a window is confidently ham
    high: float  # lexical probability above which a window is confidently spam
    approve_threshold: float
    remove_threshold: float
    fitted_on: str = ""

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CascadeBounds:
        return cls(
            low=float(data["low"]),
            high=float(data["high"]),
            approve_threshold=float(data["approve_threshold"]),
            remove_threshold=float(data["remove_threshold"]),
            fitted_on=str(data.get("fitted_on", "")),
        )


def decision_bucket(probs: np.ndarray, *, approve: float, remove: float) -> np.ndarray:
    """-1 approve, 0 queue, 1 remove: what the policy's thresholds make of a score alone."""
    p = np.asarray(probs, dtype=np.float64)
    return np.where(p >= remove, 1, np.where(p < approve, -1, 0))


def fit_bounds(
    lexical: np.ndarray,
    blended: np.ndarray,
    *,
    approve: float = DEFAULT_APPROVE_THRESHOLD,
    remove: float = DEFAULT_REMOVE_THRESHOLD,
    fitted_on: str = "",
) -> CascadeBounds:
    """The widest bounds under which every window of the sample that would skip keeps its
    decision: low is at most the approve threshold and at most the lexical probability of any
    window whose blend is not approved; high is at least the remove threshold and at least the
    lexical probability of any window whose blend is not removed (the rule is strict: p < low,
    p > high)."""
    lex = np.asarray(lexical, dtype=np.float64)
    blend = np.asarray(blended, dtype=np.float64)
    not_approved = lex[decision_bucket(blend, approve=approve, remove=remove) != -1]
    not_removed = lex[decision_bucket(blend, approve=approve, remove=remove) != 1]
    low = min([approve, *not_approved.tolist()])
    high = max([np.nextafter(remove, -np.inf), *not_removed.tolist()])
    return CascadeBounds(
        low=float(low), high=float(high), approve_threshold=approve, remove_threshold=remove, fitted_on=fitted_on
    )


def window_confidence(lexical: np.ndarray, bounds: CascadeBounds) -> np.ndarray:
    """Per window: -1 confidently ham, 1 confidently spam, 0 undecided."""
    p = np.asarray(lexical, dtype=np.float64)
    return np.where(p > bounds.high, 1, np.where(p < bounds.low, -1, 0))


def skipped_texts(
    owners: np.ndarray, lexical: np.ndarray, familiar: np.ndarray, bounds: CascadeBounds | None
) -> tuple[np.ndarray, np.ndarray]:
    """(per text: whether it skips the transformer, per window: whether it is classified).
    owners: the text of each window; familiar: per text, measured and unfamiliarity < 1."""
    owners = np.asarray(owners, dtype=np.int64)
    familiar = np.asarray(familiar, dtype=bool)
    if bounds is None:
        return np.zeros(len(familiar), dtype=bool), np.ones(len(owners), dtype=bool)
    confidence = window_confidence(lexical, bounds)
    any_spam = np.zeros(len(familiar), dtype=bool)
    any_spam[owners[confidence == 1]] = True
    any_open = np.zeros(len(familiar), dtype=bool)
    any_open[owners[confidence != -1]] = True
    skip = familiar & (any_spam | ~any_open)
    classify = ~skip[owners] & ~(familiar[owners] & (confidence == -1))
    return skip, classify


def cascade_text_probs(
    owners: np.ndarray,
    transformer: np.ndarray,
    lexical: np.ndarray,
    familiar: np.ndarray,
    bounds: CascadeBounds | None,
    *,
    weight: float,
) -> tuple[np.ndarray, np.ndarray]:
    """(text score per text, whether it skipped the transformer) as spam_pipeline serves them,
    from every window's transformer and lexical probability (transformer values of windows the
    cascade does not classify are ignored). bounds None: the cascade off, the plain blend."""
    owners = np.asarray(owners, dtype=np.int64)
    lex = np.asarray(lexical, dtype=np.float64)
    skip, classify = skipped_texts(owners, lex, familiar, bounds)
    blended = (1.0 - weight) * np.asarray(transformer, dtype=np.float64) + weight * lex
    window_probs = np.where(classify, blended, lex)
    probs = np.full(len(skip), -np.inf)
    np.maximum.at(probs, owners, window_probs)
    return probs, skip


def read_bounds(model_dir: Path) -> CascadeBounds | None:
    path = Path(model_dir) / "serving.json"
    data = json.loads(path.read_text()).get(CASCADE_KEY) if path.is_file() else None
    return CascadeBounds.from_json(data) if data else None


def write_bounds(model_dir: Path, bounds: CascadeBounds) -> Path:
    """Store the bounds in the text model's serving.json (the metadata publish reads)."""
    path = Path(model_dir) / "serving.json"
    serving = json.loads(path.read_text())
    serving[CASCADE_KEY] = bounds.as_json()
    path.write_text(json.dumps(serving, indent=2) + "\n")
    return path


def window_scores(classifier: Any, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(owners, transformer probability, lexical probability) of every window of `texts`, from
    an OnnxTextClassifier with a lexical model (modelops.text.inference.row_scores)."""
    owners, transformer, lexical = classifier.row_scores(list(texts))
    if lexical is None:
        raise ValueError(f"{classifier.model_dir} has no lexical model: nothing to cascade on")
    return owners, transformer, lexical


def fit_for_model(model_dir: Path, validation_texts: Sequence[str]) -> CascadeBounds:
    """Bounds for the text model in `model_dir` (its served file and lexical weight), fitted on
    every window of the validation texts."""
    from modelops.text.inference import OnnxTextClassifier

    classifier = OnnxTextClassifier(model_dir)
    _, transformer, lexical = window_scores(classifier, validation_texts)
    w = classifier.lexical_weight
    blended = (1.0 - w) * transformer + w * lexical
    return fit_bounds(lexical, blended, fitted_on=f"validation split ({len(lexical)} windows)")
