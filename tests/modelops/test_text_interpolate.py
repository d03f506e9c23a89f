"""Averaging a fine-tune with its start: the arithmetic, and which weight is kept within the budget."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import DistilBertForSequenceClassification, PreTrainedTokenizerBase

from modelops.text.finetune import load_base
from modelops.text.interpolate import ALPHAS, Retained, interpolate_within, interpolated_state
from modelops.text.tiny import build_tiny_checkpoint
from tests.modelops.test_text_train import small_splits


def test_the_average_runs_from_the_start_to_the_fine_tune_and_keeps_integer_buffers() -> None:
    start = {"w": torch.zeros(3), "ids": torch.arange(3)}
    tuned = {"w": torch.full((3,), 4.0), "ids": torch.arange(3) + 10}
    assert torch.equal(interpolated_state(start, tuned, 0.0)["w"], start["w"])
    assert torch.equal(interpolated_state(start, tuned, 1.0)["w"], tuned["w"])
    assert torch.allclose(interpolated_state(start, tuned, 0.25)["w"], torch.full((3,), 1.0))
    assert torch.equal(interpolated_state(start, tuned, 0.25)["ids"], tuned["ids"])


def test_a_weight_outside_zero_to_one_or_two_different_models_are_refused() -> None:
    one = {"w": torch.zeros(2)}
    with pytest.raises(ValueError, match="alpha"):
        interpolated_state(one, one, 1.5)
    with pytest.raises(ValueError, match="differ"):
        interpolated_state(one, {"v": torch.zeros(2)}, 0.5)


def _tiny_pair(
    tmp_path: Path,
) -> tuple[DistilBertForSequenceClassification, PreTrainedTokenizerBase, dict[str, torch.Tensor]]:
    """A tiny model and a start that differs from it: the same architecture, another seed."""
    tuned, tokenizer = load_base(str(build_tiny_checkpoint(tmp_path / "tuned", seed=1)))
    start, _ = load_base(str(build_tiny_checkpoint(tmp_path / "start", seed=2)))
    return tuned, tokenizer, {k: v.clone() for k, v in start.state_dict().items()}


def test_a_fine_tune_within_the_budget_is_kept_as_trained(tmp_path: Path) -> None:
    tuned, tokenizer, start = _tiny_pair(tmp_path)
    before = {k: v.clone() for k, v in tuned.state_dict().items()}
    splits = small_splits(n_train=8, n_eval=24)
    result = interpolate_within(
        tuned,
        tokenizer,
        start,
        # Any F1 is within a whole point of F1.
        retained=Retained(splits.validation.texts, splits.validation.labels, budget=1.0),
        max_length=32,
        learnt=(splits.test.texts, splits.test.labels),
    )
    assert result.alpha == 1.0
    assert [t["alpha"] for t in result.tried] == [1.0] and "learnt_f1" in result.tried[0]
    assert all(torch.equal(v, before[k]) for k, v in tuned.state_dict().items())


def test_no_weight_within_the_budget_leaves_the_smallest_loaded_and_says_so(tmp_path: Path) -> None:
    tuned, tokenizer, start = _tiny_pair(tmp_path)
    trained = {k: v.clone() for k, v in tuned.state_dict().items()}
    splits = small_splits(n_train=8, n_eval=24)
    result = interpolate_within(
        tuned,
        tokenizer,
        start,
        # Nothing can gain a whole point of F1 over the start.
        retained=Retained(splits.validation.texts, splits.validation.labels, budget=-1.0),
        max_length=32,
        alphas=(0.2, 1.0, 0.6),
    )
    assert result.alpha is None
    assert [t["alpha"] for t in result.tried] == [1.0, 0.6, 0.2]  # largest first
    expected = interpolated_state(start, trained, 0.2)
    assert all(torch.allclose(v, expected[k]) for k, v in tuned.state_dict().items())
    assert result.as_report()["alpha"] is None and result.as_report()["budget"] == -1.0


def test_the_first_weight_within_the_budget_is_kept(tmp_path: Path) -> None:
    """The start itself is always within a zero budget of itself: with the start as the fine-tune,
    the first alpha tried passes; the default ladder starts at the fine-tune as trained."""
    tuned, tokenizer, _ = _tiny_pair(tmp_path)
    itself = {k: v.clone() for k, v in tuned.state_dict().items()}
    splits = small_splits(n_train=8, n_eval=24)
    result = interpolate_within(
        tuned,
        tokenizer,
        itself,
        retained=Retained(splits.validation.texts, splits.validation.labels, budget=0.0),
        max_length=32,
    )
    assert result.alpha == max(ALPHAS) == 1.0 and len(result.tried) == 1
    with pytest.raises(ValueError, match="no alpha"):
        interpolate_within(
            tuned,
            tokenizer,
            itself,
            retained=Retained(splits.validation.texts, splits.validation.labels, budget=0.0),
            max_length=32,
            alphas=(),
        )


def test_a_fine_tune_that_forgets_is_pulled_back_towards_its_start(tmp_path: Path) -> None:
    """A start that flags every text (its head's bias pushed to spam) and a 'fine-tune' that
    calls everything legitimate: the fine-tune loses every retained violation; the largest weight
    whose F1 stays within the budget is kept, and each weight tried before it was outside."""
    tuned, tokenizer, _ = _tiny_pair(tmp_path)
    with torch.no_grad():
        tuned.classifier.bias.copy_(torch.tensor([-50.0, 50.0]))
        start = {k: v.clone() for k, v in tuned.state_dict().items()}
        tuned.classifier.bias.copy_(torch.tensor([50.0, -50.0]))
    splits = small_splits(n_train=8, n_eval=40)
    result = interpolate_within(
        tuned,
        tokenizer,
        start,
        retained=Retained(splits.validation.texts, splits.validation.labels, budget=0.0),
        max_length=32,
        alphas=(1.0, 0.5, 0.0),
    )
    assert result.start_f1 > 0.0
    assert result.tried[0] == {"alpha": 1.0, "retained_f1": 0.0}
    assert result.alpha is not None and result.alpha < 1.0
    assert all(t["retained_f1"] < result.start_f1 for t in result.tried[:-1])
    assert result.tried[-1]["retained_f1"] >= round(result.start_f1, 4) - 1e-9
    assert tuned.classifier.bias[0] < 50.0


def test_the_score_judged_and_its_reference_can_be_the_served_ones(tmp_path: Path) -> None:
    """The round judges the text score as it will be served (rescore) against the served score's
    F1 (reference_f1): a reference no alpha can reach keeps none; the start's own F1 as the
    reference keeps the fine-tune as trained when it scores the same."""
    tuned, tokenizer, _ = _tiny_pair(tmp_path)
    itself = {k: v.clone() for k, v in tuned.state_dict().items()}
    splits = small_splits(n_train=8, n_eval=40)
    flagged: list[int] = []

    def everything_flagged(probs: np.ndarray) -> np.ndarray:
        flagged.append(len(probs))
        return np.ones_like(probs)

    spam = sum(splits.validation.labels)
    all_flagged_f1 = 2 * spam / (len(splits.validation.labels) + spam)
    unreachable = interpolate_within(
        tuned,
        tokenizer,
        itself,
        retained=Retained(
            splits.validation.texts,
            splits.validation.labels,
            budget=0.0,
            reference_f1=1.0,
            rescore=everything_flagged,
        ),
        max_length=32,
        alphas=(1.0, 0.5),
    )
    assert unreachable.alpha is None and unreachable.reference_f1 == 1.0
    assert unreachable.start_f1 == pytest.approx(all_flagged_f1)
    assert flagged == [len(splits.validation.texts)] * 3  # the start, then each alpha
    reachable = interpolate_within(
        tuned,
        tokenizer,
        itself,
        retained=Retained(
            splits.validation.texts,
            splits.validation.labels,
            budget=0.0,
            reference_f1=all_flagged_f1,
            rescore=everything_flagged,
        ),
        max_length=32,
    )
    assert reachable.alpha == 1.0
