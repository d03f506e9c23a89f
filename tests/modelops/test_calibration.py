"""Calibration on data with a known answer, and the calibrators folded into the models give
exactly the calibrated scores (the served model is the evaluated one)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import xgboost as xgb

from modelops.calibration import (
    apply_platt,
    apply_temperature,
    check_fold,
    expected_calibration_error,
    fit_platt,
    fit_temperature,
    fold_platt,
    reliability_bins,
)


def _true_logits(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Logits z and labels drawn with P(spam) = sigmoid(z): z is perfectly calibrated."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, 2.5, size=n)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-z))).astype(np.int64)
    return z, y


@pytest.mark.parametrize("true_temperature", [0.5, 2.0, 4.0])
def test_temperature_scaling_recovers_a_known_temperature(true_temperature):
    z, y = _true_logits(20_000, seed=1)
    observed = z * true_temperature  # over-confident (T > 1) or under-confident (T < 1) logits
    fitted = fit_temperature(observed, y)
    assert fitted == pytest.approx(true_temperature, rel=0.06)
    before = expected_calibration_error(y, apply_temperature(observed, 1.0))
    after = expected_calibration_error(y, apply_temperature(observed, fitted))
    assert before is not None and after is not None
    assert after < 0.02 < before


def test_a_separable_validation_split_does_not_make_scores_infinitely_sharp():
    margins = np.r_[np.linspace(2, 8, 100), -np.linspace(2, 8, 200)]
    labels = np.r_[np.ones(100), np.zeros(200)].astype(np.int64)
    temperature = fit_temperature(margins, labels)
    a, _ = fit_platt(margins, labels)
    # Plain log-loss would drive T to its lower bound and a to infinity here.
    assert 0.3 < temperature < 3.0 and 0.3 < a < 3.0


def test_platt_scaling_recovers_a_known_map():
    z, y = _true_logits(20_000, seed=2)
    a_true, b_true = 0.4, 1.0
    observed = (z - b_true) / a_true  # so that sigmoid(a_true * observed + b_true) = sigmoid(z)
    a, b = fit_platt(observed, y)
    assert a == pytest.approx(a_true, rel=0.06) and b == pytest.approx(b_true, abs=0.08)
    ece = expected_calibration_error(y, apply_platt(observed, a, b))
    assert ece is not None and ece < 0.02


def test_ece_and_reliability_bins_by_hand():
    y = np.array([1, 0, 1, 1])
    p = np.array([0.05, 0.05, 0.95, 0.95])
    # bin 0: mean 0.05, observed 0.5 (2 rows); bin 9: mean 0.95, observed 1.0 (2 rows)
    assert expected_calibration_error(y, p) == pytest.approx(0.5 * 0.45 + 0.5 * 0.05)
    bins = reliability_bins(y, p)
    assert [b["n"] for b in bins] == [2, 0, 0, 0, 0, 0, 0, 0, 0, 2]
    assert bins[0]["observed"] == 0.5 and bins[5]["observed"] is None


def test_platt_folded_into_a_booster_serves_the_calibrated_probability():
    rng = np.random.default_rng(3)
    names = ["a", "b", "c"]
    x = rng.normal(size=(3000, 3)).astype(np.float32)
    y = (x[:, 0] + 0.5 * rng.normal(size=3000) > 0).astype(np.float32)
    booster = xgb.train(
        {"objective": "binary:logistic", "max_depth": 3, "eta": 0.5},
        xgb.DMatrix(x[:2000], label=y[:2000], feature_names=names),
        60,
    )
    x_val, y_val = x[2000:], y[2000:]
    margin = booster.predict(xgb.DMatrix(x_val, feature_names=names), output_margin=True)
    a, b = fit_platt(margin, y_val)
    folded = fold_platt(booster, a, b)
    assert check_fold(booster, folded, x_val, names, a, b) < 1e-5
    served = folded.predict(xgb.DMatrix(x_val, feature_names=names))
    before = booster.predict(xgb.DMatrix(x_val, feature_names=names))
    ece_served, ece_before = expected_calibration_error(y_val, served), expected_calibration_error(y_val, before)
    assert ece_served is not None and ece_before is not None and ece_served < ece_before
    # SHAP contributions of the folded booster still add up to its (calibrated) margin.
    contribs = folded.predict(xgb.DMatrix(x_val, feature_names=names), pred_contribs=True)
    assert np.allclose(contribs.sum(axis=1), a * margin + b, atol=1e-4)


def test_temperature_folded_into_the_text_head(tmp_path: Path):
    from modelops.calibration import fold_temperature
    from modelops.text.calibrate import calibrate_text_model, predict_margins
    from modelops.text.finetune import load_base
    from modelops.text.tiny import build_tiny_checkpoint

    base = build_tiny_checkpoint(tmp_path / "tiny", seed=4)
    model, tokenizer = load_base(str(base))
    texts = [f"message number {i} {'win cash now' if i % 3 == 0 else 'see you at lunch'}" for i in range(60)]
    labels = [1 if i % 3 == 0 else 0 for i in range(60)]
    before = predict_margins(model, tokenizer, texts, max_length=32)

    summary = calibrate_text_model(
        model, tokenizer, validation=(texts, labels), test=(texts[:20], labels[:20]), max_length=32
    )

    temperature = summary["temperature"]
    after = predict_margins(model, tokenizer, texts, max_length=32)
    assert np.allclose(after, before / temperature, atol=1e-4)
    assert np.array_equal(after > 0, before > 0)  # no decision at 0.5 changes
    assert summary["validation"]["ece_after"] <= summary["validation"]["ece_before"]
    assert summary["test"]["reliability_after"] and summary["method"] == "temperature"
    fold_temperature(model, 1.0 / temperature)  # undoing it restores the margins
    restored = predict_margins(model, tokenizer, texts, max_length=32)
    assert np.allclose(restored, before, atol=1e-4)
    assert torch.isfinite(model.classifier.weight).all()


def test_too_little_validation_data_leaves_the_model_alone(tmp_path: Path):
    from modelops.text.calibrate import calibrate_text_model
    from modelops.text.finetune import load_base
    from modelops.text.tiny import build_tiny_checkpoint

    model, tokenizer = load_base(str(build_tiny_checkpoint(tmp_path / "tiny", seed=5)))
    weight = model.classifier.weight.detach().clone()
    summary = calibrate_text_model(model, tokenizer, validation=(["a", "b"], [0, 1]), test=None, max_length=16)
    assert summary["method"] == "none" and "too little" in summary["reason"]
    assert torch.equal(model.classifier.weight, weight)


def test_calibrate_command_folds_a_temperature_into_a_trained_model(tmp_path: Path):
    """A model trained before calibration existed gets a calibrated version: same decisions at
    0.5, ECE reported before/after on the SMS test split, the card says so."""
    import json

    from django.core.management import call_command

    from modelops.text.data import load_sms_splits
    from modelops.text.tiny import build_tiny_checkpoint
    from modelops.text.train import TrainConfig, current_model_dir, run_training
    from tests.modelops.test_text_train import small_splits

    base = build_tiny_checkpoint(tmp_path / "tiny", seed=6)
    config = TrainConfig(base=str(base), max_length=32, epochs=1, batch_size=8, max_steps=3, time_budget_s=None)
    trained = run_training(small_splits(), config, tmp_path / "text", version="v1", progress=False, log=lambda _: None)
    assert json.loads((trained / "metrics.json").read_text())["calibration"]["method"] == "none"  # 20 texts

    call_command("calibrate_text_model", model_dir=str(trained), out_root=str(tmp_path / "text"))

    calibrated = current_model_dir(tmp_path / "text")
    assert calibrated != trained.resolve()
    metrics = json.loads((calibrated / "metrics.json").read_text())
    calibration = metrics["calibration"]
    assert calibration["method"] == "temperature" and calibration["temperature"] > 0
    assert calibration["test"]["ece_after"] <= calibration["test"]["ece_before"] + 1e-9
    assert metrics["test"]["pytorch_fp32"]["n"] == len(load_sms_splits().test)
    assert "onnx" not in metrics and not (calibrated / "model.onnx").exists()
    assert "## Calibration (temperature scaling)" in (calibrated / "MODEL_CARD.md").read_text()
