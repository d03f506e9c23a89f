from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import xgboost as xgb
from django.core.management import call_command
from pytest_django import Settings

from contracts.feature_schema import BEHAVIOUR_FEATURES, FUSION_FEATURES, LINK_FEATURES
from modelops.tabular import artifacts
from modelops.tabular.bootstrap import BootstrapConfig, run_bootstrap
from modelops.tabular.text_probs import TfidfTextProbabilities, find_text_model_dir, resolve_text_probabilities
from modelops.text.data import SmsSplits, TextSplit, load_sms_splits


@pytest.fixture(scope="module")
def tiny_splits() -> SmsSplits:
    """A few hundred real SMS, stratified the way the real splits are."""
    full = load_sms_splits()

    def take(split: TextSplit, spam: int, ham: int) -> TextSplit:
        s = [(t, y) for t, y in zip(split.texts, split.labels, strict=True) if y == 1][:spam]
        h = [(t, y) for t, y in zip(split.texts, split.labels, strict=True) if y == 0][:ham]
        rows = s + h
        return TextSplit([t for t, _ in rows], [y for _, y in rows])

    return SmsSplits(
        train=take(full.train, 40, 160),
        validation=take(full.validation, 25, 75),
        test=take(full.test, 20, 60),
        seed=full.seed,
        raw_rows=full.raw_rows,
        duplicates_removed=full.duplicates_removed,
        conflicting_dropped=full.conflicting_dropped,
    )


def test_bootstrap_writes_the_documented_layout(tmp_path: Path, tiny_splits: SmsSplits) -> None:
    text_probs = TfidfTextProbabilities(tiny_splits.train.texts, tiny_splits.train.labels)
    result = run_bootstrap(
        train=tiny_splits.train,
        validation=tiny_splits.validation,
        test=tiny_splits.test,
        text_probabilities=text_probs,
        out_root=tmp_path,
        config=BootstrapConfig(seed=1, contexts_per_text=1, cross_fit_folds=3),
        version="v-test",
        sms_summary=tiny_splits.summary(),
        log=lambda _: None,
    )
    version_dir = tmp_path / "v-test"
    assert result.version_dir == version_dir
    assert artifacts.current_dir(tmp_path) == version_dir.resolve()
    for name in ("link.json", "behaviour.json", "fusion.json", "feature_names.json", "manifest.json", "metrics.json"):
        assert (version_dir / name).is_file(), name
    names = json.loads((version_dir / "feature_names.json").read_text())
    assert names == {
        "link": list(LINK_FEATURES),
        "behaviour": list(BEHAVIOUR_FEATURES),
        "fusion": list(FUSION_FEATURES),
    }
    for kind, expected in (("link", LINK_FEATURES), ("behaviour", BEHAVIOUR_FEATURES), ("fusion", FUSION_FEATURES)):
        booster = xgb.Booster()
        booster.load_model(str(version_dir / f"{kind}.json"))
        assert tuple(booster.feature_names or ()) == expected
        assert booster.num_features() == len(expected)

    manifest = artifacts.read_manifest(version_dir)
    assert manifest["version"] == "v-test"
    assert manifest["text_probabilities"]["kind"] == "tfidf_fallback"
    assert manifest["models"]["fusion"]["feature_names"] == list(FUSION_FEATURES)

    metrics = json.loads((version_dir / "metrics.json").read_text())
    assert metrics["synthetic_context"] is True
    for name in ("fusion", "text_only", "link", "behaviour"):
        assert set(metrics["test"][name]) >= {"precision", "recall", "f1", "pr_auc", "accuracy"}
    assert metrics["test"]["fusion"]["n"] == len(tiny_splits.test)

    card = (version_dir / "MODEL_CARD.md").read_text()
    assert "Synthetic data" in card and "Fallback text probabilities" in card
    assert "bot_farm" in card and "risky_tld_fresh" in card
    # Every booster carries a Platt calibrator; the card reports ECE before and after on test.
    for kind in ("link", "behaviour", "fusion"):
        calibration = metrics["calibration"][kind]
        assert calibration["method"] == "platt", calibration
        assert calibration["test"]["ece_after"] is not None and calibration["test"]["reliability_after"]
        assert f"## Calibration ({kind})" in card
    assert "out-of-fold" in metrics["calibration"]["fusion"]["validation"]["fitted_on"]

    # The served bundle reproduces the in-memory models.
    bundle = artifacts.load_bundle(version_dir)
    x = np.zeros((2, len(FUSION_FEATURES)), dtype=np.float32)
    np.testing.assert_allclose(bundle["fusion"].predict_proba(x), result.models["fusion"].predict_proba(x), atol=1e-6)


def test_current_pointer_moves_and_accepts_a_file(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    artifacts.set_current(tmp_path, tmp_path / "a")
    artifacts.set_current(tmp_path, tmp_path / "b")
    assert artifacts.current_dir(tmp_path) == (tmp_path / "b").resolve()
    (tmp_path / "current").unlink()
    (tmp_path / "current").write_text("a\n")
    assert artifacts.current_dir(tmp_path) == (tmp_path / "a").resolve()
    with pytest.raises(FileNotFoundError):
        artifacts.current_dir(tmp_path / "nothing")


def test_text_model_resolution_falls_back_without_a_model(tmp_path: Path) -> None:
    assert find_text_model_dir([tmp_path / "missing", tmp_path]) is None
    provider = resolve_text_probabilities(
        text_dirs=[tmp_path], train_texts=["win cash now", "hi mum"], train_labels=[1, 0]
    )
    assert provider.kind == "tfidf_fallback"
    assert "FALLBACK" in provider.describe()["description"]
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "model.onnx").write_bytes(b"")
    (tmp_path / "current").symlink_to("v1")
    assert find_text_model_dir([tmp_path]) == (tmp_path / "v1").resolve()


def test_command_trains_into_artifacts_dir(
    tmp_path: Path, tiny_splits: SmsSplits, monkeypatch: pytest.MonkeyPatch, settings: Settings
) -> None:
    monkeypatch.setattr("modelops.management.commands.train_feature_models.load_sms_splits", lambda: tiny_splits)
    settings.ARTIFACTS_DIR = tmp_path
    out = io.StringIO()
    call_command("train_feature_models", "--contexts-per-text", "1", "--model-version", "cmd-v1", stdout=out)
    assert "test fusion" in out.getvalue()
    assert artifacts.current_dir(tmp_path / "tabular") == (tmp_path / "tabular" / "cmd-v1").resolve()
    assert artifacts.read_manifest(tmp_path / "tabular" / "cmd-v1")["text_probabilities"]["kind"] == "tfidf_fallback"


def test_onnx_text_probabilities_adapter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The adapter batches texts through textmodel's OnnxTextClassifier(model_dir).predict_proba."""
    import sys
    import types

    calls: list[int] = []

    class FakeClassifier:
        def __init__(self, model_dir: Path) -> None:
            self.model_dir = model_dir
            self.file = "model.int8.onnx"

        def predict_proba(self, texts: list[str]) -> np.ndarray:
            calls.append(len(texts))
            return np.asarray([0.9 if "win" in t else 0.1 for t in texts])

    fake = types.ModuleType("modelops.text.inference")
    fake.OnnxTextClassifier = FakeClassifier  # type: ignore[attr-defined]  # a stand-in module built at run time
    monkeypatch.setitem(sys.modules, "modelops.text.inference", fake)
    (tmp_path / "20261121T000000Z").mkdir()
    (tmp_path / "20261121T000000Z" / "model.int8.onnx").write_bytes(b"")
    (tmp_path / "current").symlink_to("20261121T000000Z")

    provider = resolve_text_probabilities(text_dirs=[tmp_path], train_texts=[], train_labels=[])
    assert provider.kind == "onnx"
    probs = provider.predict_proba(["win now"] * 40 + ["hi"] * 5)
    assert calls == [32, 13]
    np.testing.assert_allclose(probs, [0.9] * 40 + [0.1] * 5)
    info = provider.describe()
    assert info["version"] == "20261121T000000Z" and info["file"] == "model.int8.onnx"
