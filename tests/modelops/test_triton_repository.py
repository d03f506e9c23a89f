"""Publishing into the model repository: versions, validation, rollback, bootstrap skipping."""

from __future__ import annotations

import json
import shutil
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
import xgboost as xgb
from django.core.management import call_command

from modelops import model_repository
from modelops.model_repository import Artifacts, PublishError, publish
from modelops.tiny import cached_tiny_artifacts
from tests.fixtures.triton import free_ports


@pytest.fixture(scope="module")
def tiny() -> Artifacts:
    return cached_tiny_artifacts(seed=0)


def test_publish_writes_self_contained_versions(tmp_path: Path, tiny: Artifacts):
    repo = tmp_path / "repo"
    assert publish(tiny, repository=repo) == {
        "tokenizer": 1,
        "text_classifier": 1,
        "link_model": 1,
        "behaviour_model": 1,
        "fusion_model": 1,
        "spam_pipeline": 1,
    }
    # New tree versions: spam_pipeline gets a new version bundling them (its code is the same).
    assert publish(Artifacts(tabular=tiny.tabular), repository=repo) == {
        "link_model": 2,
        "behaviour_model": 2,
        "fusion_model": 2,
        "spam_pipeline": 2,
    }
    v1 = repo / "text_classifier" / "1"
    assert {"model.py", "model.onnx", "serving.json", "PUBLISHED.json"} <= {p.name for p in v1.iterdir()}
    assert json.loads((repo / "tokenizer" / "1" / "serving.json").read_text())["max_length"] == 32
    assert json.loads((repo / "link_model" / "2" / "features.json").read_text())[0] == "url_present"
    infos = model_repository.list_versions("fusion_model", repository=repo)
    assert [i.version for i in infos] == [1, 2]
    assert infos[0].sha256 == infos[1].sha256 and infos[1].rollback_of is None
    assert not [p for p in (repo / "fusion_model").iterdir() if p.name.startswith(".tmp")]
    # Every tree version runs the one shared XGBoost backend source.
    shared = model_repository.TREE_MODEL_SOURCE.read_bytes()
    for model in ("link_model", "behaviour_model", "fusion_model"):
        for version in ("1", "2"):
            assert (repo / model / version / "model.py").read_bytes() == shared, (model, version)


def test_pipeline_bundles_copies_of_the_tokenizer_and_trees_it_runs(tmp_path: Path, tiny: Artifacts):
    """spam_pipeline runs the tokenizer and the trees in-process: each of its versions holds
    copies of exactly the part versions its bundle.json names, so cleaning or rolling back a
    part never changes a loaded pipeline, and a new part means a new pipeline version."""
    repo = tmp_path / "repo"
    publish(tiny, repository=repo)
    # Text only into an empty repository: no trees yet, so no pipeline can be bundled.
    other = tmp_path / "text-only"
    assert "spam_pipeline" not in publish(Artifacts(text=tiny.text), repository=other)

    v1 = repo / "spam_pipeline" / "1"
    parts = {"tokenizer": 1, "link_model": 1, "behaviour_model": 1, "fusion_model": 1}
    assert json.loads((v1 / "bundle.json").read_text()) == parts
    for model, number in parts.items():
        source = repo / model / str(number)
        copied = {p.name for p in (v1 / model).iterdir()}
        assert "model.py" not in copied and "PUBLISHED.json" not in copied
        for name in copied:
            assert (v1 / model / name).read_bytes() == (source / name).read_bytes(), (model, name)
    assert {"tokenizer.json", "serving.json"} <= {p.name for p in (v1 / "tokenizer").iterdir()}
    assert {"model.json", "features.json"} <= {p.name for p in (v1 / "fusion_model").iterdir()}

    # Nothing changed: no new version. A new text model: a new bundle naming it.
    assert model_repository.publish_pipeline(repository=repo) == {}
    assert publish(Artifacts(text=tiny.text), repository=repo) == {
        "tokenizer": 2,
        "text_classifier": 2,
        "spam_pipeline": 2,
    }
    assert json.loads((repo / "spam_pipeline" / "2" / "bundle.json").read_text()) == {**parts, "tokenizer": 2}
    # Rolling back several parts with bundle=False, then one bundle for all of them.
    publish(Artifacts(tabular=tiny.tabular), repository=repo)
    out: dict[str, int] = {}
    for model in ("link_model", "behaviour_model", "fusion_model"):
        out.update(model_repository.rollback(model, 1, repository=repo, bundle=False))
    assert out == {"link_model": 3, "behaviour_model": 3, "fusion_model": 3}
    assert model_repository.publish_pipeline(repository=repo) == {"spam_pipeline": 4}
    assert json.loads((repo / "spam_pipeline" / "4" / "bundle.json").read_text()) == {
        "tokenizer": 2,
        "link_model": 3,
        "behaviour_model": 3,
        "fusion_model": 3,
    }
    # The bundled copies outlive the parts' own folders.
    for n in model_repository.versions("fusion_model", repository=repo)[:-1]:
        shutil.rmtree(repo / "fusion_model" / str(n))  # as model storage pruning does
    assert (v1 / "fusion_model" / "model.json").exists()


def test_rollback_copies_old_files_to_a_new_number(tmp_path: Path, tiny: Artifacts):
    repo = tmp_path / "repo"
    publish(tiny, repository=repo)
    publish(tiny, repository=repo)
    assert model_repository.rollback("tokenizer", 1, repository=repo) == {
        "tokenizer": 3,
        "text_classifier": 3,
        "spam_pipeline": 3,
    }
    assert json.loads((repo / "spam_pipeline" / "3" / "bundle.json").read_text())["tokenizer"] == 3
    assert (repo / "text_classifier" / "3" / "model.onnx").read_bytes() == (
        repo / "text_classifier" / "1" / "model.onnx"
    ).read_bytes()
    with pytest.raises(PublishError):
        model_repository.rollback("fusion_model", 9, repository=repo)


def test_current_may_be_a_file_naming_the_version(tmp_path: Path, tiny: Artifacts):
    root = tmp_path / "tabular"
    assert tiny.tabular is not None
    shutil.copytree(tiny.tabular, root / "v7")
    (root / "current").write_text("v7\n")
    assert model_repository.resolve_current(root / "current") == (root / "v7").resolve()
    assert "fusion_model" in publish(Artifacts(tabular=root / "current"), repository=tmp_path / "repo")


def test_publish_rejects_artifacts_that_break_the_contract(tmp_path: Path, tiny: Artifacts):
    assert tiny.text is not None and tiny.tabular is not None
    text = tmp_path / "text"
    shutil.copytree(tiny.text, text)
    (text / "serving.json").unlink()
    with pytest.raises(PublishError, match=r"serving\.json"):
        publish(Artifacts(text=text), repository=tmp_path / "repo")

    tabular = tmp_path / "tabular"
    shutil.copytree(tiny.tabular, tabular)
    x = np.random.default_rng(0).random((32, 5)).astype(np.float32)
    booster = xgb.train({"objective": "binary:logistic"}, xgb.DMatrix(x, label=x[:, 0] > 0.5), 2)
    booster.save_model(str(tabular / "link.json"))
    with pytest.raises(PublishError, match="5 features"):
        publish(Artifacts(tabular=tabular), repository=tmp_path / "repo")


def test_bootstrap_skips_finished_steps_and_publishes_once(tmp_path: Path, tiny: Artifacts, settings):
    assert tiny.text is not None and tiny.tabular is not None
    artifacts = tmp_path / "artifacts"
    shutil.copytree(tiny.text, artifacts / "text" / "v1")
    (artifacts / "text" / "v1" / "config.json").write_text("{}")
    (artifacts / "text" / "current").symlink_to("v1")
    shutil.copytree(tiny.tabular, artifacts / "tabular" / "current")
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text("{}")
    settings.ARTIFACTS_DIR = artifacts
    settings.TEXT_MODEL_BASE = str(base)
    settings.TRITON_MODEL_REPOSITORY = tmp_path / "repo"
    settings.TRITON_URL = f"127.0.0.1:{free_ports(1)[0]}"  # no server: nothing to load into

    out = StringIO()
    call_command("bootstrap_models", stdout=out)
    text = out.getvalue()
    for step in ("build_base_checkpoint", "train_text_model", "export_text_model", "train_feature_models"):
        assert f"skip {step}" in text
    # The tiny text model has no abuse model: bootstrap trains one, and publish serves it.
    assert "== train_abuse_model done" in text
    assert (tmp_path / "repo" / "spam_pipeline" / "1" / "tokenizer" / "abuse.joblib").is_file()
    assert "published fusion_model version 1" in text
    assert "triton not running" in text

    out = StringIO()
    call_command("bootstrap_models", stdout=out)
    assert "skip train_abuse_model" in out.getvalue()
    assert "skip publish_models" in out.getvalue()


def test_refresh_code_republishes_served_weights_with_new_model_py(tmp_path: Path, tiny: Artifacts):
    repo = tmp_path / "repo"
    publish(tiny, repository=repo)
    assert model_repository.stale_code(repository=repo) == []
    assert model_repository.refresh_code(repository=repo) == {}
    (repo / "text_classifier" / "1" / "model.py").write_text("# old code\n")
    (repo / "fusion_model" / "1" / "model.py").write_text("# old code\n")
    assert model_repository.stale_code(repository=repo) == ["text_classifier", "fusion_model"]
    assert model_repository.refresh_code(repository=repo) == {
        "tokenizer": 2,
        "text_classifier": 2,
        "fusion_model": 2,
        "spam_pipeline": 2,
    }
    fresh = repo / "text_classifier" / "2"
    assert (fresh / "model.onnx").read_bytes() == (repo / "text_classifier" / "1" / "model.onnx").read_bytes()
    assert (fresh / "model.py").read_bytes() == (
        model_repository.SOURCE_REPOSITORY / "text_classifier" / "model.py"
    ).read_bytes()
    assert (repo / "fusion_model" / "2" / "model.py").read_bytes() == model_repository.TREE_MODEL_SOURCE.read_bytes()
    assert model_repository.stale_code(repository=repo) == []


def test_publish_into_the_gpu_profile_keeps_its_configs(tmp_path: Path, tiny: Artifacts):
    from modelops import gpu_profile

    repo = tmp_path / "gpu"
    shutil.copytree(gpu_profile.GPU_REPOSITORY, repo)
    before = {p: p.read_text() for p in repo.glob("*/config.pbtxt")}
    publish(tiny, repository=repo)
    model_repository.refresh_code(repository=repo)
    assert {p: p.read_text() for p in repo.glob("*/config.pbtxt")} == before
    assert not (repo / "text_classifier" / "model.py").exists()
    # The profile keeps no code: every python model's version runs the source tree's.
    for model in ("tokenizer", "link_model", "behaviour_model", "fusion_model", "spam_pipeline"):
        served = (repo / model / "1" / "model.py").read_bytes()
        assert served == model_repository.model_source(model).read_bytes(), model
    assert model_repository.stale_code(repository=repo) == []
    # The engine is built on the GPU host from the fp32 ONNX published next to where it goes.
    assert (repo / "text_classifier" / "1" / "model.onnx").exists()


def test_bootstrap_checks_each_step_when_its_turn_comes(monkeypatch, settings, tmp_path: Path):
    """A fresh bootstrap fits the cascade: its check runs after training wrote the lexical model."""
    from modelops.management.commands import bootstrap_models as command

    settings.TRITON_MODEL_REPOSITORY = tmp_path / "repo"
    trained = {"text": False}
    for check in ("base_checkpoint_exists", "text_exported", "abuse_trained", "tabular_trained"):
        monkeypatch.setattr(command, check, lambda: True)
    monkeypatch.setattr(command, "text_trained", lambda: trained["text"])
    # Before training there is no lexical model, so nothing to fit ("done"); after it, not done.
    monkeypatch.setattr(command, "text_cascade_fitted", lambda: not trained["text"])
    monkeypatch.setattr(command, "repository_current", lambda: True)
    monkeypatch.setattr(command.model_repository, "stale_code", lambda repository: [])
    ran: list[str] = []

    def run(self, name: str, *args: str) -> None:
        ran.append(name)
        trained["text"] = trained["text"] or name == "train_text_model"

    monkeypatch.setattr(command.Command, "_run", run)
    call_command("bootstrap_models", stdout=StringIO())
    assert ran == ["train_text_model", "fit_text_cascade"]
