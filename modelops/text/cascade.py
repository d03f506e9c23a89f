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
  windows is then decided: at least ``high``; the other windows are not classified either), or
  when it fits in one window and that is confidently ham. Its text score is the maximum
  lexical probability of its windows.
- A long text with no confidently spam window runs every window: in a long text one spam
  message can sit in a window of benign words whose lexical probability it barely moves
  (benchmarks/cascade.py's long_texts suite: letting confidently ham windows of long texts
  skip auto-approved 48 spam texts of 135 instead of 18).
- A text skips only when its unfamiliarity (modelops/text/familiarity.py) is below
  ``max_unfamiliarity``: where the two halves disagree is where the words are least like the
  training texts, and an unfamiliar text (>= 1) never skips.

The bounds are fitted on the validation split (never the test split), at the default policy
thresholds, as the widest ones under which no validation window's decision (approve below the
approve threshold, remove at or above the remove threshold, queue between) differs between its
served blend and its lexical probability; ``max_unfamiliarity`` is the unfamiliarity of the
most familiar validation text whose decision would differ that way at any lexical probability
(on the SMS test split this kept 3 of the 4 decisions the bounds alone changed, for half the
share skipped: benchmarks/RESULTS.md, Cascade). They are stored in the text model's serving.json
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
    max_unfamiliarity: float = 1.0  # a text at least this unfamiliar runs the transformer
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
            max_unfamiliarity=float(data.get("max_unfamiliarity", 1.0)),
            fitted_on=str(data.get("fitted_on", "")),
        )


def decision_bucket(probs: np.ndarray, *, approve: float, remove: float) -> np.ndarray:
    """-1 approve, 0 queue, 1 remove: what the policy's thresholds make of a score alone."""
    p = np.asarray(probs, dtype=np.float64)
    return np.where(p >= remove, 1, np.where(p < approve, -1, 0))


def fit_bounds(
    lexical: np.ndarray,
    blended: np.ndarray,
    unfamiliarity: np.ndarray | None = None,
    *,
    approve: float = DEFAULT_APPROVE_THRESHOLD,
    remove: float = DEFAULT_REMOVE_THRESHOLD,
    fitted_on: str = "",
) -> CascadeBounds:
    """The widest bounds under which every window of the sample that would skip keeps its
    decision: low is at most the approve threshold and at most the lexical probability of any
    window whose blend is not approved; high is at least the remove threshold and at least the
    lexical probability of any window whose blend is not removed (the rule is strict: p < low,
    p > high). max_unfamiliarity (unfamiliarity per window, that of its text): the least
    unfamiliarity of a window whose blend and lexical probability decide differently, capped
    at 1."""
    lex = np.asarray(lexical, dtype=np.float64)
    blend = np.asarray(blended, dtype=np.float64)
    served = decision_bucket(blend, approve=approve, remove=remove)
    not_approved = lex[served != -1]
    not_removed = lex[served != 1]
    low = min([approve, *not_approved.tolist()])
    high = max([np.nextafter(remove, -np.inf), *not_removed.tolist()])
    limit = 1.0
    if unfamiliarity is not None:
        differs = served != decision_bucket(lex, approve=approve, remove=remove)
        limit = min([1.0, *np.asarray(unfamiliarity, dtype=np.float64)[differs].tolist()])
    return CascadeBounds(
        low=float(low),
        high=float(high),
        approve_threshold=approve,
        remove_threshold=remove,
        max_unfamiliarity=float(limit),
        fitted_on=fitted_on,
    )


def window_confidence(lexical: np.ndarray, bounds: CascadeBounds) -> np.ndarray:
    """Per window: -1 confidently ham, 1 confidently spam, 0 undecided."""
    p = np.asarray(lexical, dtype=np.float64)
    return np.where(p > bounds.high, 1, np.where(p < bounds.low, -1, 0))


def skipped_texts(
    owners: np.ndarray, lexical: np.ndarray, unfamiliarity: np.ndarray, bounds: CascadeBounds | None
) -> np.ndarray:
    """Per text: whether it skips the transformer (every window of a text that does not is
    classified). owners: the text of each window; unfamiliarity: per text (< 0: not measured,
    which never skips)."""
    owners = np.asarray(owners, dtype=np.int64)
    u = np.asarray(unfamiliarity, dtype=np.float64)
    if bounds is None:
        return np.zeros(len(u), dtype=bool)
    confidence = window_confidence(lexical, bounds)
    any_spam = np.zeros(len(u), dtype=bool)
    any_spam[owners[confidence == 1]] = True
    any_open = np.zeros(len(u), dtype=bool)
    any_open[owners[confidence != -1]] = True
    single = np.bincount(owners, minlength=len(u)) == 1
    familiar = (u >= 0) & (u < bounds.max_unfamiliarity)
    return familiar & (any_spam | (single & ~any_open))


def cascade_text_probs(
    owners: np.ndarray,
    transformer: np.ndarray,
    lexical: np.ndarray,
    unfamiliarity: np.ndarray,
    bounds: CascadeBounds | None,
    *,
    weight: float,
) -> tuple[np.ndarray, np.ndarray]:
    """(text score per text, whether it skipped the transformer) as spam_pipeline serves them,
    from every window's transformer and lexical probability (transformer values of skipped
    texts are ignored). bounds None: the cascade off, the plain blend."""
    owners = np.asarray(owners, dtype=np.int64)
    lex = np.asarray(lexical, dtype=np.float64)
    skip = skipped_texts(owners, lex, unfamiliarity, bounds)
    blended = (1.0 - weight) * np.asarray(transformer, dtype=np.float64) + weight * lex
    window_probs = np.where(skip[owners], lex, blended)
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
    """Bounds for the text model in `model_dir` (its served file, lexical weight and
    familiarity reference), fitted on every window of the validation texts."""
    from modelops.text.familiarity import load_familiarity
    from modelops.text.inference import OnnxTextClassifier

    classifier = OnnxTextClassifier(model_dir)
    owners, transformer, lexical = window_scores(classifier, validation_texts)
    w = classifier.lexical_weight
    blended = (1.0 - w) * transformer + w * lexical
    familiarity = load_familiarity(model_dir)
    unfamiliarity = familiarity.unfamiliarity(list(validation_texts))[owners] if familiarity else None
    return fit_bounds(lexical, blended, unfamiliarity, fitted_on=f"validation split ({len(lexical)} windows)")
