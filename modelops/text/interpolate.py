"""Weight-space interpolation of a fine-tune with the checkpoint it started from (WiSE-FT).

A short fine-tune on a few hundred labels of a new kind of text moves the transformer towards
that text and away from what it knew: the SMS suite loses more than the promotion gate allows,
and the round is held with everything it learnt. Averaging the weights of the starting and the
fine-tuned model, ``(1 - alpha) * start + alpha * tuned``, keeps most of what the fine-tune learnt
at a fraction of the forgetting (Wortsman et al., "Robust fine-tuning of zero-shot models",
CVPR 2022), because both sit in one basin of the loss: the fine-tune is a short walk from its
start. ``interpolate_within`` walks alpha down from 1 and keeps the largest one whose F1 on the
retained data (what the model must not forget) stays within a budget of a reference: the
start's own, or the served text score's when the caller judges the score as it will be served
(the transformer blended with the served lexical half).

Measured on a fine-tune of 500 insults labels (benchmarks/adaptation_finetune.py --alphas), the
learning fades fast below 1: violations under the approve threshold 10 % at 1, 19 % at 0.95,
31 % at 0.9, 57 % at 0.8. The ladder therefore starts at the fine-tune as trained and stops at
one half: below that the round is better off dropping the fine-tune.

Hand-written: a weighted mean of two state dicts of the same architecture is a few lines of
torch; the model-merging libraries (mergekit and the like) target LLM checkpoints on disk and
would add a dependency for this one line of arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from transformers import DistilBertForSequenceClassification, PreTrainedTokenizerBase

from modelops.text.finetune import predict_proba
from modelops.text.metrics import spam_metrics

# Tried in this order; the first within the budget is kept. 1.0 is the fine-tune as trained.
ALPHAS = (1.0, 0.95, 0.9, 0.8, 0.7, 0.6, 0.5)


@dataclass(frozen=True)
class Retained:
    """What the fine-tune must not forget: texts, their labels (1: violation), how much F1 it may
    lose on them, and against what (None: the starting checkpoint's own F1)."""

    texts: Sequence[str]
    labels: Sequence[int]
    budget: float
    reference_f1: float | None = None
    # The score judged, from the transformer's probabilities on ``texts`` (None: as they are);
    # a round blends them with the served lexical half, as they will be served.
    rescore: Callable[[np.ndarray], np.ndarray] | None = None


@dataclass
class Interpolation:
    """What ``interpolate_within`` chose and what it measured on the way."""

    alpha: float | None  # None: no alpha kept the retained F1 within the budget (the smallest is loaded)
    start_f1: float
    reference_f1: float  # the F1 each alpha must stay within ``budget`` of
    budget: float
    tried: list[dict[str, float]] = field(default_factory=list)

    def as_report(self) -> dict[str, object]:
        return {
            "alpha": self.alpha,
            "start_f1": round(self.start_f1, 4),
            "reference_f1": round(self.reference_f1, 4),
            "budget": self.budget,
            "tried": self.tried,
        }


def interpolated_state(
    start: Mapping[str, torch.Tensor], tuned: Mapping[str, torch.Tensor], alpha: float
) -> dict[str, torch.Tensor]:
    """``(1 - alpha) * start + alpha * tuned`` for every floating tensor; the rest (integer
    buffers such as position ids) as the fine-tune has them."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be within [0, 1], not {alpha}")
    if start.keys() != tuned.keys():
        missing = sorted(set(start) ^ set(tuned))[:5]
        raise ValueError(f"the two checkpoints differ in their tensors: {missing}")
    mixed: dict[str, torch.Tensor] = {}
    for name, value in tuned.items():
        if value.is_floating_point():
            mixed[name] = torch.lerp(start[name].to(value.dtype), value, alpha)
        else:
            mixed[name] = value.clone()
    return mixed


def interpolate_within(
    model: DistilBertForSequenceClassification,
    tokenizer: PreTrainedTokenizerBase,
    start: Mapping[str, torch.Tensor],
    *,
    retained: Retained,
    max_length: int,
    learnt: tuple[Sequence[str], Sequence[int]] | None = None,
    alphas: Sequence[float] = ALPHAS,
) -> Interpolation:
    """Load into ``model`` the largest alpha of ``alphas`` whose F1 at 0.5 on the retained texts
    (their score as ``retained.rescore`` makes it) is at least their reference F1 (default: the
    start's) minus their budget. ``learnt`` (the labels' validation texts) is measured for the report only, since a
    few dozen labels are too few to choose on. When no alpha stays within the budget the
    smallest is left loaded and ``alpha`` is None: the caller decides."""
    if not alphas:
        raise ValueError("no alpha to try")
    tuned = {k: v.detach().clone() for k, v in model.state_dict().items()}
    texts, labels = list(retained.texts), [int(v) for v in retained.labels]
    judged = retained.rescore or (lambda probs: probs)

    def retained_f1() -> float:
        probs, _ = predict_proba(model, tokenizer, texts, max_length=max_length)
        return float(spam_metrics(labels, judged(probs))["f1"])

    def learnt_f1(texts_: Sequence[str], labels_: Sequence[int]) -> float:
        probs, _ = predict_proba(model, tokenizer, texts_, max_length=max_length)
        return float(spam_metrics([int(v) for v in labels_], probs)["f1"])

    model.load_state_dict(interpolated_state(start, tuned, 0.0))
    start_f1 = retained_f1()
    result = Interpolation(
        alpha=None,
        start_f1=start_f1,
        reference_f1=start_f1 if retained.reference_f1 is None else retained.reference_f1,
        budget=retained.budget,
    )
    for alpha in sorted(alphas, reverse=True):
        model.load_state_dict(interpolated_state(start, tuned, alpha))
        f1 = retained_f1()
        entry = {"alpha": alpha, "retained_f1": round(f1, 4)}
        if learnt is not None and learnt[0]:
            entry["learnt_f1"] = round(learnt_f1(*learnt), 4)
        result.tried.append(entry)
        if f1 >= result.reference_f1 - retained.budget:
            result.alpha = alpha
            break
    model.eval()
    return result
