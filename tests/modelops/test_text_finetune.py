"""The fine-tune loop's device handling: which device and precision it picks, and that the CPU path trains."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from modelops.text.finetune import (
    TrainConfig,
    TrainedTextModel,
    load_base,
    select_device,
    select_precision,
    train_text_model,
)
from modelops.text.tiny import build_tiny_checkpoint
from tests.modelops.test_text_train import small_splits


@pytest.mark.parametrize(
    ("preference", "cuda_available", "expected"),
    [("auto", False, "cpu"), ("auto", True, "cuda"), ("cpu", True, "cpu"), ("cuda:1", True, "cuda:1")],
)
def test_select_device(preference: str, cuda_available: bool, expected: str) -> None:
    assert select_device(preference, cuda_available=cuda_available) == torch.device(expected)


def test_asking_for_cuda_without_a_gpu_is_an_error_not_a_cpu_run() -> None:
    with pytest.raises(ValueError, match="no CUDA GPU"):
        select_device("cuda", cuda_available=False)


@pytest.mark.parametrize(
    ("device", "preference", "bf16", "expected"),
    [
        ("cpu", "bf16", True, "fp32"),
        ("cpu", "fp16", True, "fp32"),  # autocast stays off on the CPU: the reference recipe
        ("cuda", "fp32", True, "fp32"),
        ("cuda", "bf16", True, "bf16"),
        ("cuda", "fp16", False, "fp16"),
    ],
)
def test_select_precision(device: str, preference: str, bf16: bool, expected: str) -> None:
    assert select_precision(torch.device(device), preference, bf16_supported=bf16) == expected


def test_unknown_or_unsupported_precision_is_refused() -> None:
    with pytest.raises(ValueError, match="precision"):
        select_precision(torch.device("cuda"), "int8", bf16_supported=True)
    with pytest.raises(ValueError, match="bf16"):
        select_precision(torch.device("cuda"), "bf16", bf16_supported=False)


def _train_tiny(base: Path, **config: Any) -> TrainedTextModel:
    """The tiny checkpoint fine-tuned on 48 small texts, on the CPU, one thread."""
    splits = small_splits(n_train=48, n_eval=16)
    return train_text_model(
        splits.train.texts,
        splits.train.labels,
        splits.validation.texts,
        splits.validation.labels,
        TrainConfig(base=str(base), batch_size=8, threads=1, max_length=48, device="cpu", **config),
        progress=False,
        log=lambda _: None,
    )


def test_cpu_path_trains_in_fp32_and_returns_the_model_on_the_cpu(tmp_path: Path) -> None:
    base = build_tiny_checkpoint(tmp_path / "tiny")
    trained = _train_tiny(base, epochs=2)
    untrained, _ = load_base(str(base))

    assert (trained.device, trained.precision) == ("cpu", "fp32")
    assert [h.samples for h in trained.history] == [48, 48]
    head = trained.model.classifier.weight
    assert head.device.type == "cpu" and head.dtype == torch.float32
    assert not torch.equal(head, untrained.classifier.weight)


def test_half_precision_base_loads_as_fp32(tmp_path: Path) -> None:
    base = build_tiny_checkpoint(tmp_path / "tiny")
    model, _ = load_base(str(base))
    model.half().save_pretrained(tmp_path / "half")
    (tmp_path / "half" / "vocab.txt").write_text((base / "vocab.txt").read_text())
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (tmp_path / "half" / name).write_text((base / name).read_text())

    reloaded, _ = load_base(str(tmp_path / "half"))

    assert {p.dtype for p in reloaded.parameters()} == {torch.float32}


def test_frozen_layers_keep_the_bases_weights_and_the_rest_trains(tmp_path: Path) -> None:
    base = build_tiny_checkpoint(tmp_path / "tiny")
    trained = _train_tiny(base, epochs=1, freeze_layers=1)
    untrained, _ = load_base(str(base))
    before = dict(untrained.named_parameters())
    after = dict(trained.model.named_parameters())
    layers = len(untrained.distilbert.transformer.layer)
    assert layers >= 2
    for name, value in after.items():
        frozen = name.startswith(("distilbert.embeddings.", "distilbert.transformer.layer.0."))
        if frozen:
            assert torch.equal(value, before[name]), name
    top = f"distilbert.transformer.layer.{layers - 1}.ffn.lin2.weight"
    assert not torch.equal(after[top], before[top])


def test_freezing_more_layers_than_the_base_has_still_trains_the_top_one(tmp_path: Path) -> None:
    """A shallower base under the default freeze setting: every layer but the top stays frozen."""
    base = build_tiny_checkpoint(tmp_path / "tiny")
    untrained, _ = load_base(str(base))
    layers = len(untrained.distilbert.transformer.layer)
    trained = _train_tiny(base, epochs=1, freeze_layers=layers + 2)
    before = dict(untrained.named_parameters())
    after = dict(trained.model.named_parameters())
    below_top = f"distilbert.transformer.layer.{layers - 2}.ffn.lin2.weight"
    top = f"distilbert.transformer.layer.{layers - 1}.ffn.lin2.weight"
    assert torch.equal(after[below_top], before[below_top])
    assert not torch.equal(after[top], before[top])


def test_a_negative_freeze_keeps_all_but_the_top_layers_whatever_the_depth(tmp_path: Path) -> None:
    """-1 on two layers freezes the lowest one (and the embeddings); -2 freezes no layer."""
    base = build_tiny_checkpoint(tmp_path / "tiny")
    untrained, _ = load_base(str(base))
    assert len(untrained.distilbert.transformer.layer) == 2
    before = dict(untrained.named_parameters())
    lowest, position = (
        "distilbert.transformer.layer.0.ffn.lin2.weight",
        "distilbert.embeddings.position_embeddings.weight",
    )

    one = dict(_train_tiny(base, epochs=1, freeze_layers=-1).model.named_parameters())
    assert torch.equal(one[lowest], before[lowest]) and torch.equal(one[position], before[position])
    none = dict(_train_tiny(base, epochs=1, freeze_layers=-2).model.named_parameters())
    assert not torch.equal(none[lowest], before[lowest]) and not torch.equal(none[position], before[position])
