"""Labels -> dataset -> retrain -> promote -> scored with the new version, rollback, and failures
that leave production untouched: against a REAL Triton server (a private one: these tests
publish new versions, which the shared session server must not see)."""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

import pytest

from feedback.models import ModelVersion, RunStatus, TrainingRun
from feedback.services.datasets import dataset_snapshot
from feedback.services.promotion import (
    PromotionFailed,
    promote_run,
    registry_sync,
    rollback_to,
    served_text_dir,
    served_version,
)
from feedback.services.training import training_run_execute
from moderation.models import AuditLog, Post, PostStatus
from scoring.models import Score
from scoring.services.queue_rescore import waiting_rescore
from scoring.services.scoring import score_posts
from scoring.serving import TritonScoringClient, get_client, reset_clients
from tests.feedback.conftest import make_post
from tests.feedback.test_training import label_posts
from tests.fixtures.triton import start_tiny_triton

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
TREES = ("link_model", "behaviour_model", "fusion_model")


@pytest.fixture(scope="module")
def private_triton(tmp_path_factory):
    with start_tiny_triton(tmp_path_factory.mktemp("feedback-triton"), seed=3) as server:
        yield server


@pytest.fixture
def served(settings, private_triton):
    settings.TRITON_URL = private_triton.grpc_url
    settings.TRITON_PROTOCOL = "grpc"
    settings.TRITON_GRPC_PORT = private_triton.config.grpc_port
    settings.TRITON_HTTP_PORT = private_triton.config.http_port
    settings.TRITON_METRICS_PORT = private_triton.config.metrics_port
    settings.TRITON_MODEL_REPOSITORY = private_triton.repository
    # The tiny server loads every model, and these tests read the standalone trees' versions.
    settings.TRITON_STANDALONE_MODELS = True
    # These tests are about publishing and serving; the gate has tests of its own
    # (tests/feedback/test_gate.py), so here it lets every candidate through.
    settings.PROMOTION_GATE_MAX_F1_DROP = 1.0
    settings.PROMOTION_GATE_MAX_FPR_RISE = 1.0
    reset_clients()
    yield private_triton
    reset_clients()


def _served() -> dict[str, str]:
    versions = get_client().model_versions()
    return {m: versions[m] for m in TREES}


def _score_new_post(source) -> Score:
    post = make_post(source, with_score=False, status="received", text="win a free prize now")
    score_posts(post_ids=[post.pk])
    return Score.objects.get(post=post)


def _trained_run(source, moderator, admin_user, *, authors: int, seed: int, auto: bool = False) -> TrainingRun:
    label_posts(source, moderator, authors=authors, seed=seed)
    dataset = dataset_snapshot(created_by=admin_user)
    run = TrainingRun.objects.create(dataset=dataset, scope="tabular", started_by=admin_user, auto_promote=auto)
    return training_run_execute(run_id=run.pk)


def test_labels_to_retrain_to_promote_to_score_with_new_version(served, source, moderator, admin_user):
    registry_sync()
    before = _served()
    old = ModelVersion.objects.get(name="tabular", is_production=True)
    assert str(old.version) == before["fusion_model"]
    waiting = _score_new_post(source).post
    Post.objects.filter(pk=waiting.pk).update(status=PostStatus.QUEUED)  # waits for a moderator

    run = _trained_run(source, moderator, admin_user, authors=220, seed=11, auto=True)

    assert run.status == RunStatus.SUCCEEDED, run.error
    cand, prod = run.candidate_metrics["tabular"]["final"], run.production_metrics["tabular"]["final"]
    assert cand["n"] == prod["n"] >= 50  # the same held-out rows for both
    assert run.report["guarded"]["tabular"]["better_on_all"], run.report["guarded"]
    assert run.report["auto_promotion"]["promoted"], run.report["auto_promotion"]

    new = ModelVersion.objects.get(name="tabular", is_production=True)
    assert new.training_run_id == run.pk and new.dataset_id == run.dataset_id and new.rollback_target == old
    assert new.promoted_by == admin_user and new.metrics["final"]["pr_auc"] == cand["pr_auc"]
    after = _served()
    assert all(int(after[m]) == int(before[m]) + 1 for m in TREES)
    assert new.triton_versions == {m: int(after[m]) for m in TREES}
    # Scoring switches to the new version, and the Score row records it.
    score = _score_new_post(source)
    assert score.model_versions["fusion_model"] == after["fusion_model"]
    assert AuditLog.objects.filter(action="model.promote.auto", target_id=str(new.pk)).exists()
    # The post waiting since before the promotion is re-scored by the new version (the task the
    # promotion publishes on commit; run in place here, the test's transaction never commits).
    waiting_rescore()
    rescored = Score.objects.filter(post=waiting).order_by("-created_at", "-id").first()
    assert rescored is not None and rescored.model_versions["fusion_model"] == after["fusion_model"]


def test_rollback_to_an_earlier_version_in_one_action(served, source, moderator, admin_user):
    registry_sync()
    first = ModelVersion.objects.filter(name="tabular").order_by("version").first()
    assert first is not None
    run = _trained_run(source, moderator, admin_user, authors=120, seed=12)
    assert run.status == RunStatus.SUCCEEDED, run.error
    (promoted,) = promote_run(run=run, user=admin_user)
    assert _served()["fusion_model"] == str(promoted.version)

    restored = rollback_to(target=first, user=admin_user)

    assert restored.is_production and restored.restored_from == first and restored.rollback_target == promoted
    assert restored.version > promoted.version
    assert not ModelVersion.objects.get(pk=promoted.pk).is_production
    repo = served.repository
    for model in TREES:
        assert served_version(model) == restored.triton_versions[model]
        assert filecmp.cmp(
            repo / model / str(first.triton_versions[model]) / "model.json",
            repo / model / str(restored.triton_versions[model]) / "model.json",
            shallow=False,
        )
    assert _score_new_post(source).model_versions["fusion_model"] == str(restored.version)
    assert AuditLog.objects.filter(action="model.rollback", actor=admin_user).exists()


def test_failed_load_leaves_production_untouched(served, source, moderator, admin_user, monkeypatch):
    registry_sync()
    run = _trained_run(source, moderator, admin_user, authors=100, seed=13)
    before, production = _served(), ModelVersion.objects.get(name="tabular", is_production=True)
    real_load = TritonScoringClient.load_model

    def failing_load(self, name):
        if name == "fusion_model":
            raise RuntimeError("simulated load failure")
        real_load(self, name)

    monkeypatch.setattr(TritonScoringClient, "load_model", failing_load)
    with pytest.raises(PromotionFailed, match="production is unchanged"):
        promote_run(run=run, user=admin_user)
    monkeypatch.setattr(TritonScoringClient, "load_model", real_load)

    assert _served() == before  # link/behaviour were loaded, then reverted
    assert ModelVersion.objects.get(name="tabular", is_production=True) == production
    assert not ModelVersion.objects.filter(training_run=run).exists()
    for model in TREES:
        assert served_version(model) == int(before[model])


def test_failing_run_leaves_production_untouched(served, source, moderator, admin_user):
    registry_sync()
    before = _served()
    run = _trained_run(source, moderator, admin_user, authors=3, seed=14, auto=True)
    assert run.status == RunStatus.FAILED and "test split" in run.error
    assert _served() == before
    assert not ModelVersion.objects.filter(training_run=run).exists()


def test_text_retrain_promote_and_score(served, source, moderator, admin_user, settings, tmp_path):
    """Scope "text": fine-tune (a tiny DistilBERT, a few steps), export ONNX, compare with the
    served text model on the same texts, promote, and score with the new text version."""
    import random

    from modelops.text.tiny import build_tiny_checkpoint
    from tests.feedback.conftest import decide

    settings.FEEDBACK_TEXT_BASE = str(build_tiny_checkpoint(tmp_path / "base"))
    settings.FEEDBACK_TEXT_MAX_STEPS = 4
    settings.TEXT_MAX_LENGTH = 32
    rng = random.Random(5)
    spam_words, ham_words = ["win", "cash", "prize", "free", "click"], ["lunch", "meeting", "mum", "tomorrow", "home"]
    for a in range(90):
        spammy = a % 3 == 0
        words = spam_words if spammy else ham_words
        post = make_post(source, author=f"t-{a}", text=" ".join(rng.choices(words, k=6)), spammy=spammy, rng=rng)
        decide(post, moderator, "spam" if spammy else "ham")
    registry_sync()
    before = get_client().model_versions()
    dataset = dataset_snapshot(created_by=admin_user)
    run = TrainingRun.objects.create(dataset=dataset, scope="text", started_by=admin_user)
    run = training_run_execute(run_id=run.pk)

    assert run.status == RunStatus.SUCCEEDED, run.error
    cand, prod = run.candidate_metrics["text"], run.production_metrics["text"]
    assert cand["n"] == prod["n"] >= 10 and cand["base"] == settings.FEEDBACK_TEXT_BASE
    # Cumulative by default: the bootstrap SMS texts are replayed, and the candidate is scored
    # against production on the SMS suite; its temperature is folded into the exported model.
    assert run.report["training_data"]["rows"]["bootstrap"]["train"] > 100
    assert {e["name"] for e in run.report["suites"]["text"]} >= {"SMS test split (bootstrap)"}
    assert cand["calibration"]["method"] == "temperature", cand["calibration"]
    # The lexical half is refitted with it, so the promoted text score is still the blend.
    assert "TF-IDF" in cand["lexical"]["model"]
    (version,) = promote_run(run=run, user=admin_user)
    served = served_text_dir()
    assert served is not None
    tokenizer_dir = Path(served[1])  # the published tokenizer version carries the lexical model
    assert (tokenizer_dir / "lexical.joblib").is_file()
    assert json.loads((tokenizer_dir / "serving.json").read_text())["lexical_weight"] > 0
    after = get_client().model_versions()
    assert version.name == "text" and int(after["text_classifier"]) == int(before["text_classifier"]) + 1
    assert after["tokenizer"] == after["text_classifier"] and after["fusion_model"] == before["fusion_model"]
    assert _score_new_post(source).model_versions["text_classifier"] == after["text_classifier"]
