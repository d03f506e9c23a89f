"""Distilling a shallower text model: the student's layers are the teacher's, the loss reaches the
teacher's probabilities, and a run writes a student with its provenance."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import DistilBertForSequenceClassification

from modelops.text.distill import build_student, distillation_loss, parse_layers, teacher_logits
from modelops.text.finetune import TrainConfig, load_base, predict_proba, train_text_model
from modelops.text.tiny import build_tiny_checkpoint, tiny_config
from modelops.text.train import run_training
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


def test_run_training_with_a_teacher_writes_a_shallower_model_and_says_so(teacher: Path, tmp_path: Path) -> None:
    config = TrainConfig(base="unused", epochs=1, batch_size=8, max_steps=2, threads=1, max_length=32)
    out = run_training(
        small_splits(),
        config,
        tmp_path,
        version="s",
        progress=False,
        log=lambda _: None,
        teacher=teacher,
        student_layers=(1, 2),
    )
    assert json.loads((out / "config.json").read_text())["n_layers"] == 2
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["distilled_from"] == {"teacher": str(teacher), "layers": [1, 2]}
    assert "distilled" in (out / "MODEL_CARD.md").read_text()
