"""Distilling a shallower text model: the student's layers are the teacher's, the loss reaches the
teacher's probabilities, and a run writes a student with its provenance."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from django.core.management import call_command
from django.core.management.base import CommandError
from pytest_django import Settings
from transformers import DistilBertForSequenceClassification

from modelops.text.distill import (
    build_student,
    distillation_loss,
    parse_layers,
    shuffled_copies,
    spaced_layers,
    teacher_logits,
)
from modelops.text.finetune import TrainConfig, load_base, predict_proba, train_text_model
from modelops.text.tiny import build_tiny_checkpoint, tiny_config
from modelops.text.train import current_model_dir, run_training
from tests.modelops.test_text_train import small_splits


@pytest.fixture(scope="module")
def teacher(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny three-layer teacher, randomly initialised (distinct layers, so a copy is checkable)."""
    out = tmp_path_factory.mktemp("teacher")
    build_tiny_checkpoint(out, seed=3)
    torch.manual_seed(3)
    DistilBertForSequenceClassification(tiny_config(n_layers=3)).save_pretrained(out)
    return out


def test_parse_layers_accepts_ascending_distinct_indexes_only() -> None:
    assert parse_layers("0,2,4") == (0, 2, 4)
    for bad in ("", "2,0", "1,1", "-1,2", "a"):
        with pytest.raises(ValueError, match="student layers"):
            parse_layers(bad)


def test_the_student_is_the_teachers_embeddings_chosen_layers_and_head(teacher: Path, tmp_path: Path) -> None:
    student_dir = build_student(teacher, (0, 2), tmp_path / "student")
    t = DistilBertForSequenceClassification.from_pretrained(teacher).state_dict()
    s = DistilBertForSequenceClassification.from_pretrained(student_dir)
    assert s.config.n_layers == 2
    state = s.state_dict()
    for name in ("distilbert.embeddings.word_embeddings.weight", "pre_classifier.weight", "classifier.bias"):
        assert torch.equal(state[name], t[name]), name
    for new, old in ((0, 0), (1, 2)):
        for part in ("attention.q_lin.weight", "ffn.lin2.bias", "output_layer_norm.weight"):
            got = state[f"distilbert.transformer.layer.{new}.{part}"]
            assert torch.equal(got, t[f"distilbert.transformer.layer.{old}.{part}"]), (new, part)
    assert not torch.equal(
        state["distilbert.transformer.layer.1.ffn.lin1.weight"], t["distilbert.transformer.layer.1.ffn.lin1.weight"]
    )
    assert json.loads((student_dir / "DISTILLED_FROM.json").read_text())["layers"] == [0, 2]
    with pytest.raises(ValueError, match="3 layers"):
        build_student(teacher, (0, 3), tmp_path / "too-deep")


def test_the_distillation_term_is_zero_only_where_the_student_agrees() -> None:
    teacher = torch.tensor([[2.0, -1.0], [0.0, 0.0]])
    assert torch.allclose(distillation_loss(teacher, teacher, 2.0), torch.zeros(2), atol=1e-7)
    apart = distillation_loss(torch.tensor([[-1.0, 2.0], [3.0, -3.0]]), teacher, 2.0)
    assert (apart > 0.1).all()


def test_the_soft_targets_pull_the_student_away_from_the_labels_by_their_weight(teacher: Path, tmp_path: Path) -> None:
    """A teacher that contradicts every label: with distill_weight 1 the student learns the
    teacher's side, with 0 the labels' (the same data, seed and steps)."""
    splits = small_splits()
    model, tokenizer = load_base(str(teacher))
    assert teacher_logits(model, tokenizer, splits.train.texts, max_length=32).shape == (len(splits.train.texts), 2)
    flipped = np.array([[3.0, -3.0] if label else [-3.0, 3.0] for label in splits.train.labels], dtype=np.float32)
    student = build_student(teacher, (0,), tmp_path / "student")
    spam = np.array(splits.train.labels) == 1

    def spam_minus_ham(weight: float) -> float:
        config = TrainConfig(
            base=str(student),
            max_length=32,
            epochs=3,
            batch_size=4,
            threads=1,
            learning_rate=5e-3,
            warmup_ratio=0.0,
            distill_weight=weight,
            distill_temperature=1.0,
        )
        # The best epoch is chosen on validation: validate on the side this run should learn.
        side = [1 - y for y in splits.train.labels] if weight else list(splits.train.labels)
        data = (splits.train.texts, splits.train.labels, splits.train.texts, side)
        trained = train_text_model(*data, config, progress=False, log=lambda _: None, soft_targets=flipped)
        probs, _ = predict_proba(trained.model, trained.tokenizer, splits.train.texts, max_length=32)
        return float(probs[spam].mean() - probs[~spam].mean())

    assert spam_minus_ham(0.0) > 0.05
    assert spam_minus_ham(1.0) < -0.05
    with pytest.raises(ValueError, match="soft_targets"):
        train_text_model(
            splits.train.texts,
            splits.train.labels,
            splits.validation.texts,
            splits.validation.labels,
            TrainConfig(base=str(student), max_steps=1, threads=1),
            progress=False,
            log=lambda _: None,
            soft_targets=flipped[:3],
        )


def _student_run(teacher: Path, tmp_path: Path, layers: tuple[int, ...], **config: Any) -> Path:
    """One tiny student training through run_training (two steps)."""
    settings = TrainConfig(base="unused", epochs=1, batch_size=8, max_steps=2, threads=1, max_length=32, **config)
    return run_training(
        small_splits(),
        settings,
        tmp_path,
        version="s",
        progress=False,
        log=lambda _: None,
        teacher=teacher,
        student_layers=layers,
    )


def test_run_training_with_a_teacher_writes_a_shallower_model_and_says_so(teacher: Path, tmp_path: Path) -> None:
    out = _student_run(teacher, tmp_path, (1, 2))
    assert json.loads((out / "config.json").read_text())["n_layers"] == 2
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["distilled_from"] == {
        "teacher": str(teacher),
        "layers": [1, 2],
        "distill_weight": 0.0,
        "shuffled_copies": 0,
    }
    assert (
        f"Distilled from the text model `{teacher}`: its embeddings, its layers [1, 2]"
        in (out / "MODEL_CARD.md").read_text()
    )


@pytest.fixture
def command_env(tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """train_text_model on the small splits, no benign corpora, into tmp_path."""
    monkeypatch.setattr("modelops.management.commands.train_text_model.load_sms_splits", lambda seed: small_splits())
    settings.ARTIFACTS_DIR = tmp_path
    settings.TEXT_MAX_LENGTH = 32
    settings.TEXT_BENIGN_CORPORA = []
    return settings


def test_spaced_layers_spread_over_the_depth() -> None:
    assert spaced_layers(3, 6) == (0, 2, 4)
    assert spaced_layers(2, 6) == (0, 3)
    assert spaced_layers(6, 6) == (0, 1, 2, 3, 4, 5)
    with pytest.raises(ValueError, match="cannot keep"):
        spaced_layers(7, 6)


def test_the_command_distils_when_the_served_depth_is_below_the_bases(
    teacher: Path, tmp_path: Path, command_env: Settings
) -> None:
    """TEXT_MODEL_LAYERS below the base's depth: the full-depth model is trained first, kept as
    a version of its own, and the served one is distilled from it."""
    command_env.TEXT_MODEL_BASE = str(teacher)  # three layers
    command_env.TEXT_MODEL_LAYERS = 1
    args = ["--max-steps", "1", "--epochs", "1", "--threads", "1", "--no-progress", "--model-version", "v"]
    call_command("train_text_model", *args, stdout=StringIO())
    served = current_model_dir(tmp_path / "text")
    assert served.name == "v"
    assert json.loads((served / "config.json").read_text())["n_layers"] == 1
    assert json.loads((served / "metrics.json").read_text())["hyperparameters"]["base"].endswith("v-teacher")
    assert json.loads((tmp_path / "text" / "v-teacher" / "config.json").read_text())["n_layers"] == 3
    distilled = json.loads((served / "metrics.json").read_text())["distilled_from"]
    assert distilled["layers"] == [0] and distilled["teacher"].endswith("v-teacher")

    command_env.TEXT_MODEL_LAYERS = 3  # the base's own depth: trained directly, nothing distilled
    call_command("train_text_model", *args[:-1], "w", stdout=StringIO())
    assert "distilled_from" not in json.loads((tmp_path / "text" / "w" / "metrics.json").read_text())
    for extra in (["--student-layers", "0"], ["--distill-weight", "0.5"]):
        with pytest.raises(CommandError, match="need --teacher"):
            call_command("train_text_model", *args[:-1], "x", *extra, stdout=StringIO())
    assert not (tmp_path / "text" / "x").exists()


def test_shuffled_copies_keep_the_words_and_the_label_of_texts_of_three_words_or_more() -> None:
    texts = ["win a free prize now", "hi", "see you at six tonight"]
    copies, labels = shuffled_copies(texts, [1, 0, 0], share=1.0, seed=0)
    assert labels == [1, 0]
    assert [sorted(c.split()) for c in copies] == [sorted(texts[0].split()), sorted(texts[2].split())]
    assert shuffled_copies(texts, [1, 0, 0], share=0.0, seed=0) == ([], [])
    many = [f"w{i} x{i} y{i} z{i}" for i in range(400)]
    half, _ = shuffled_copies(many, [0] * 400, share=0.5, seed=1)
    assert 150 < len(half) < 250


@pytest.mark.usefixtures("command_env")
def test_an_explicit_teacher_and_layers_are_checked_before_training(teacher: Path, tmp_path: Path) -> None:
    args = ["--max-steps", "1", "--epochs", "1", "--threads", "1", "--no-progress", "--teacher", str(teacher)]
    with pytest.raises(CommandError, match="cannot keep"):
        call_command("train_text_model", *args, "--student-layers", "0,3", "--model-version", "bad", stdout=StringIO())
    assert not (tmp_path / "text" / "bad").exists()
    call_command("train_text_model", *args, "--student-layers", "0,2", "--model-version", "s", stdout=StringIO())
    served = current_model_dir(tmp_path / "text")
    assert served.name == "s" and json.loads((served / "config.json").read_text())["n_layers"] == 2
    assert json.loads((served / "metrics.json").read_text())["distilled_from"]["teacher"] == str(teacher)


def test_a_teacher_trained_for_a_student_is_not_made_current(teacher: Path, tmp_path: Path) -> None:
    config = TrainConfig(base=str(teacher), epochs=1, batch_size=8, max_steps=1, threads=1, max_length=32)

    def train(version: str, **options: Any) -> Path:
        return run_training(
            small_splits(), config, tmp_path, version=version, progress=False, log=lambda _: None, **options
        )

    served = train("served")
    train("served2-teacher", make_current=False)
    assert current_model_dir(tmp_path) == served.resolve()
    with pytest.raises(ValueError, match="layers to keep"):
        train("none", teacher=teacher, student_layers=())


def test_both_distillation_terms_together_line_the_teachers_logits_up_with_the_copies(
    teacher: Path, tmp_path: Path
) -> None:
    out = _student_run(teacher, tmp_path, (0,), distill_weight=0.5, distill_shuffled_share=1.0)
    distilled = json.loads((out / "metrics.json").read_text())["distilled_from"]
    copies, _ = shuffled_copies(
        small_splits().train.texts, small_splits().train.labels, share=1.0, seed=TrainConfig(base="").seed
    )
    assert distilled["shuffled_copies"] == len(copies) > 0
    assert "its logits weigh 0.5 of the loss" in (out / "MODEL_CARD.md").read_text()


def test_the_default_freeze_trains_the_top_two_of_a_three_layer_model(teacher: Path) -> None:
    """-2 (ADAPTATION_FINETUNE_FREEZE_LAYERS' default) on the served depth: layer 0 and the
    embeddings stay, layers 1 and 2 train."""
    splits = small_splits()
    config = TrainConfig(base=str(teacher), max_length=32, epochs=1, batch_size=8, threads=1, freeze_layers=-2)
    data = (splits.train.texts, splits.train.labels, splits.validation.texts, splits.validation.labels)
    after = dict(train_text_model(*data, config, progress=False, log=lambda _: None).model.named_parameters())
    before = dict(load_base(str(teacher))[0].named_parameters())
    layer = "distilbert.transformer.layer.{}.ffn.lin2.weight"
    assert torch.equal(after[layer.format(0)], before[layer.format(0)])
    position = "distilbert.embeddings.position_embeddings.weight"
    assert torch.equal(after[position], before[position])
    for top in (1, 2):
        assert not torch.equal(after[layer.format(top)], before[layer.format(top)])
