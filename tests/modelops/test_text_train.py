"""Training smoke test on a tiny random DistilBERT: artifact layout, metrics keys, the current pointer."""

from __future__ import annotations

import json
import random
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from pytest_django import Settings

from modelops.text.batches import pad_batch
from modelops.text.data import SmsSplits, TextSplit, load_sms_splits
from modelops.text.finetune import TrainConfig, bucketed_batches, train_text_model
from modelops.text.tiny import build_tiny_checkpoint
from modelops.text.train import current_model_dir, run_training


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-base"))


def small_splits(n_train: int = 40, n_eval: int = 20) -> SmsSplits:
    full = load_sms_splits()

    def take(split: TextSplit, n: int) -> TextSplit:
        spam = [i for i, y in enumerate(split.labels) if y][: n // 4]
        ham = [i for i, y in enumerate(split.labels) if not y][: n - len(spam)]
        idx = sorted(spam + ham)
        return TextSplit([split.texts[i] for i in idx], [split.labels[i] for i in idx])

    return SmsSplits(
        train=take(full.train, n_train),
        validation=take(full.validation, n_eval),
        test=take(full.test, n_eval),
        seed=full.seed,
        raw_rows=full.raw_rows,
        duplicates_removed=full.duplicates_removed,
        conflicting_dropped=full.conflicting_dropped,
    )


def test_bucketed_batches_cover_every_text_once_with_similar_lengths() -> None:
    rng = random.Random(1)
    lengths = [rng.randint(3, 120) for _ in range(500)]
    batches = bucketed_batches(lengths, batch_size=16, pool_batches=10, rng=random.Random(2))
    flat = sorted(i for batch in batches for i in batch)
    assert flat == list(range(500))
    spread = [max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in batches]
    assert sum(spread) / len(spread) < 20  # random batches of this data would spread ~100


def test_pad_batch_pads_to_the_longest_of_the_batch_only() -> None:
    ids, mask = pad_batch([[101, 5, 102], [101, 102]], pad_id=0)
    assert ids.tolist() == [[101, 5, 102], [101, 102, 0]]
    assert mask.tolist() == [[1, 1, 1], [1, 1, 0]]


def test_run_training_writes_artifact_and_moves_current(tiny_base: Path, tmp_path: Path) -> None:
    config = TrainConfig(base=str(tiny_base), epochs=1, batch_size=8, max_steps=1, threads=1, max_length=64)
    out = run_training(small_splits(), config, tmp_path, version="v1", progress=False, log=lambda _: None)

    assert out == tmp_path / "v1"
    for name in ("config.json", "model.safetensors", "tokenizer.json", "vocab.txt", "metrics.json", "MODEL_CARD.md"):
        assert (out / name).is_file(), name
    assert current_model_dir(tmp_path) == out.resolve()
    metrics = json.loads((out / "metrics.json").read_text())
    assert {"version", "base_checkpoint", "data", "hyperparameters", "truncation", "training", "test"} <= set(metrics)
    for model in ("pytorch_fp32", "baseline_tfidf_lr"):
        assert {"accuracy", "precision", "recall", "f1", "pr_auc"} <= set(metrics["test"][model])
    assert metrics["training"]["best_epoch"] == 1
    assert metrics["hyperparameters"]["max_length"] == 64
    card = (out / "MODEL_CARD.md").read_text()
    assert "Baseline" in card and str(tiny_base) in card and "seed 42" in card

    out2 = run_training(small_splits(), config, tmp_path, version="v2", progress=False, log=lambda _: None)
    assert current_model_dir(tmp_path) == out2.resolve()


def test_command_trains_into_artifacts_dir(
    tiny_base: Path, tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("modelops.management.commands.train_text_model.load_sms_splits", lambda seed: small_splits())
    settings.TEXT_MODEL_BASE = str(tiny_base)
    settings.ARTIFACTS_DIR = tmp_path
    settings.TEXT_MAX_LENGTH = 32
    args = ["--max-steps", "1", "--epochs", "1", "--threads", "1", "--no-progress", "--model-version", "cmd"]
    call_command("train_text_model", *args, stdout=StringIO())
    out = current_model_dir(tmp_path / "text")
    assert out.name == "cmd"
    assert json.loads((out / "metrics.json").read_text())["hyperparameters"]["max_length"] == 32


def test_a_cpu_budget_counts_this_process_not_the_clock(tiny_base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process on the machine slows the clock's epochs, not this process's CPU: a run on
    the "cpu" budget stops only when its own CPU would exceed it, a "wall" one on the clock."""
    splits = small_splits()
    data = (splits.train.texts, splits.train.labels, splits.validation.texts, splits.validation.labels)

    def config(clock: str) -> TrainConfig:
        return TrainConfig(
            base=str(tiny_base),
            max_length=32,
            epochs=3,
            batch_size=8,
            threads=1,
            time_budget_s=1500,
            budget_clock=clock,
        )

    on_the_clock = train_text_model(*data, config("wall"), progress=False, log=lambda _: None)
    assert len(on_the_clock.history) == 3 and on_the_clock.stopped_early is None  # seconds of real time

    readings = iter(range(0, 10**9, 1000))  # every reading: 1,000 CPU seconds more
    monkeypatch.setattr("modelops.text.finetune.time.process_time", lambda: float(next(readings)))
    on_cpu = train_text_model(*data, config("cpu"), progress=False, log=lambda _: None)
    assert len(on_cpu.history) == 1
    assert on_cpu.stopped_early is not None and "CPU s per thread used" in on_cpu.stopped_early
    with pytest.raises(ValueError, match="budget_clock"):
        train_text_model(*data, config("sundial"), progress=False, log=lambda _: None)
