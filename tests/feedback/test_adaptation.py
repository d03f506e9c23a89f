"""Automatic adaptation: the trigger counts labels, a round refits the lexical half and the
familiarity reference, the gate holds a forgetting candidate and promotes a good one, and the
promoted version is what a REAL Triton serves (a private one: these tests publish versions)."""

from __future__ import annotations

import json
import random
from io import StringIO
from typing import Any

import onnx
import pytest
from django.core.cache import cache
from django.core.management import call_command

from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES
from feedback.models import ModelVersion, RunKind, RunStatus, TrainingRun
from feedback.services import adaptation
from feedback.services.datasets import dataset_snapshot
from feedback.services.promotion import registry_sync, served_text_dir, served_version
from modelops.text.data import load_sms_splits
from moderation.models import AuditLog
from scoring.serving import get_client
from scoring.triton_types import ScoringInput
from tests.feedback.conftest import decide, make_post

# Classifieds, a kind of post the SMS corpus has none of: moderators label it as it arrives.
SPAM_TEMPLATES = (
    "cheap {item} wholesale prices guaranteed, whatsapp {n} to order in bulk today",
    "earn {n} dollars a week from home selling {item}, no experience, message me now",
    "replica {item} at factory price, free shipping worldwide, reply for the catalogue",
    "limited offer: {item} for only {n} dollars, click the link in my profile to claim",
)
HAM_TEMPLATES = (
    "selling my old {item}, used for {n} months, pick up downtown only",
    "does anyone know a good repair shop for a {item}? mine broke after {n} years",
    "looking to swap my {item} for a bike, can meet on saturday near the park",
    "lost a {item} at the library on tuesday, reward if found, it has {n} stickers",
)
ITEMS = ("sofa", "laptop", "camera", "guitar", "stroller", "desk", "phone case", "kettle", "jacket", "lamp")
# Made of words no SMS text uses: unfamiliar until it is labelled.
UNFAMILIAR = "Photosynthetic chloroplasts catalyse carbon fixation through ribulose bisphosphate carboxylase."


def _key(name: str) -> str:
    return adaptation._key(name)


@pytest.fixture(autouse=True)
def fresh_hint() -> Any:
    keys = [_key(n) for n in (adaptation.LOCK_KEY, adaptation.COUNTER_KEY, adaptation.ENQUEUED_KEY)]
    cache.delete_many(keys)
    yield
    cache.delete_many(keys)


def classifieds(n: int, *, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        spam = i % 2 == 0
        template = rng.choice(SPAM_TEMPLATES if spam else HAM_TEMPLATES)
        out.append((template.format(item=rng.choice(ITEMS), n=rng.randint(2, 90)), "spam" if spam else "ham"))
    return out


def label(source: Any, moderator: Any, rows: list[tuple[str, str]], *, tag: str) -> None:
    for i, (text, lab) in enumerate(rows):
        post = make_post(source, author=f"{tag}-{i}", text=text, spammy=lab == "spam")
        decide(post, moderator, lab)


# --- the trigger (no model needed) -------------------------------------------------------------


@pytest.mark.django_db
def test_the_trigger_enqueues_one_round_after_n_labels(
    settings, source, moderator, monkeypatch, django_capture_on_commit_callbacks
):
    settings.ADAPTATION_ENABLED = True
    settings.ADAPTATION_MIN_NEW_LABELS = 5
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(adaptation.adapt_text_model_task, "delay", lambda **kw: calls.append(kw))
    rows = classifieds(7, seed=1)
    with django_capture_on_commit_callbacks(execute=True):
        label(source, moderator, rows[:4], tag="a")
    assert calls == []
    with django_capture_on_commit_callbacks(execute=True):
        label(source, moderator, rows[4:5], tag="b")
    assert calls == [{"trigger": "labels"}]
    with django_capture_on_commit_callbacks(execute=True):
        label(source, moderator, rows[5:], tag="c")
    assert len(calls) == 1  # one batch, one round: the round resets the hint when it ends
    assert adaptation.new_label_count() == 7


@pytest.mark.django_db
def test_a_deployment_with_adaptation_off_counts_nothing_and_runs_no_round(
    settings, source, moderator, monkeypatch, django_capture_on_commit_callbacks
):
    settings.ADAPTATION_ENABLED = False
    settings.ADAPTATION_MIN_NEW_LABELS = 1
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(adaptation.adapt_text_model_task, "delay", lambda **kw: calls.append(kw))
    with django_capture_on_commit_callbacks(execute=True):
        label(source, moderator, classifieds(3, seed=2), tag="off")
    assert calls == []
    summary = adaptation.adaptation_round(trigger="labels")
    assert summary["status"] == "skipped" and "ADAPTATION_ENABLED" in summary["reason"]
    assert not TrainingRun.objects.exists()


@pytest.mark.django_db
def test_a_round_waits_for_a_retraining_run_and_for_enough_labels(settings, source, moderator, admin_user, tmp_path):
    settings.ADAPTATION_MIN_NEW_LABELS = 50
    settings.TRITON_MODEL_REPOSITORY = tmp_path / "repo"
    label(source, moderator, classifieds(6, seed=3), tag="w")
    # Nothing served yet, and too few labels: skipped, with the reason.
    summary = adaptation.adaptation_round(trigger="labels")
    assert summary["status"] == "skipped"
    retraining = TrainingRun.objects.create(
        dataset=dataset_snapshot(created_by=admin_user), scope="text", status=RunStatus.RUNNING
    )
    summary = adaptation.adaptation_round(trigger="command", force=True)
    assert summary.pop("abuse")["reason"] == "a retraining run is queued or running"
    assert summary == {
        "status": "skipped",
        "reason": "a retraining run is queued or running",
        "trigger": "command",
        "new_labels": 6,
    }
    assert not TrainingRun.objects.exclude(pk=retraining.pk).exists()


# --- rounds against a real Triton -------------------------------------------------------------


def _served_unfamiliarity(text: str) -> float:
    [out] = get_client().score(
        [
            ScoringInput(
                text=text, preview_text="", link=[0.0] * len(LINK_FEATURES), behaviour=[0.0] * len(BEHAVIOUR_FEATURES)
            )
        ]
    )
    assert out.unfamiliarity is not None
    return out.unfamiliarity


def _adapt() -> dict[str, Any]:
    out = StringIO()
    call_command("adapt_text_model", "--force", stdout=out)
    return dict(json.loads(out.getvalue()))


@pytest.mark.integration
@pytest.mark.django_db
def test_adaptation_promotes_good_labels_holds_forgetting_ones_and_makes_labelled_text_familiar(
    served, source, moderator
):
    registry_sync()
    bootstrap = ModelVersion.objects.get(name="text", is_production=True)

    # 1. Classifieds labels: the candidate passes the gate and is served when the command returns.
    label(source, moderator, classifieds(80, seed=7), tag="good")
    first = _adapt()
    assert first["status"] == "promoted", first
    version = served_version("text_classifier")
    assert first["versions"] == {"text": version} and version == bootstrap.version + 1
    assert get_client().model_versions()["text_classifier"] == str(version)
    run = TrainingRun.objects.get(pk=first["run"])
    assert run.kind == RunKind.ADAPTATION and run.status == RunStatus.SUCCEEDED
    assert run.report["training_data"]["sms_replay"] > 3000 and run.report["training_data"]["labels_train"] > 0
    sms = first["suites"]["SMS test split (bootstrap)"]
    assert sms["candidate"] >= sms["production"] - 0.01
    # The transformer is the served one, byte for byte; the lexical half and reference are new.
    clf_dir, tok_dir = served_text_dir()  # type: ignore[misc]
    prev_clf = served.repository / "text_classifier" / str(bootstrap.version)
    assert (clf_dir / "model.onnx").read_bytes() == (prev_clf / "model.onnx").read_bytes()
    assert (tok_dir / "lexical.joblib").is_file() and (tok_dir / "familiarity.joblib").is_file()
    assert AuditLog.objects.filter(action="model.adaptation.promoted", target_id=str(run.pk)).exists()
    assert _served_unfamiliarity(UNFAMILIAR) >= 1.0

    # 2. Once moderators label it, the same text is familiar to the served model.
    label(source, moderator, [(UNFAMILIAR, "ham")], tag="science")
    served_files = {p: p.read_bytes() for p in (tok_dir / "lexical.joblib", clf_dir / "serving.json")}
    second = _adapt()
    assert second["status"] == "promoted", second
    assert get_client().model_versions()["text_classifier"] == str(version + 1)
    assert _served_unfamiliarity(UNFAMILIAR) < 1.0
    # The round wrote a new version; the files of the one it started from are as they were.
    assert all(path.read_bytes() == content for path, content in served_files.items())

    # 3. Labels that flip SMS spam to ham: the SMS suite would lose F1, so the gate holds it.
    splits = load_sms_splits()
    flipped = [(t, "ham") for t, y in zip(splits.train.texts, splits.train.labels, strict=True) if y == 1][:200]
    label(source, moderator, flipped, tag="flip")
    third = _adapt()
    assert third["status"] == "held", json.dumps(third, default=str)
    sms = third["suites"]["SMS test split (bootstrap)"]
    assert sms["production"] - sms["candidate"] > 0.01
    assert any("SMS test split" in reason for reason in third["reasons"])
    assert served_version("text_classifier") == version + 1  # production untouched
    assert get_client().model_versions()["text_classifier"] == str(version + 1)
    held = TrainingRun.objects.get(pk=third["run"])
    assert held.report["auto_promotion"]["promoted"] is False
    assert AuditLog.objects.filter(action="model.adaptation.held", target_id=str(held.pk)).exists()
    # The next round counts labels from the held round on: nothing new, nothing to do.
    assert adaptation.new_label_count() == 0


# --- the learning-over-time table ---------------------------------------------------------------


def _suites(sms_f1: float) -> dict[str, Any]:
    return {"text": [{"name": "SMS test split (bootstrap)", "kind": "bootstrap", "candidate": {"f1": sms_f1}}]}


@pytest.mark.django_db
def test_the_registry_shows_labels_suite_f1_and_queue_rate_per_version(
    client, settings, tmp_path, source, moderator, admin_user, django_assert_max_num_queries
):
    from datetime import timedelta

    from django.urls import reverse
    from django.utils import timezone

    from feedback.selectors import learning_over_time
    from scoring.models import Score

    settings.TRITON_MODEL_REPOSITORY = tmp_path / "repo"
    label(source, moderator, classifieds(4, seed=9), tag="t")
    dataset = dataset_snapshot(created_by=admin_user)
    now = timezone.now()
    old = ModelVersion.objects.create(name="text", version=1, promoted_at=now - timedelta(hours=3))
    promoted_run = TrainingRun.objects.create(
        dataset=dataset,
        scope="text",
        kind=RunKind.ADAPTATION,
        status=RunStatus.SUCCEEDED,
        report={"suites": _suites(0.97)},
    )
    v2 = ModelVersion.objects.create(
        name="text", version=2, training_run=promoted_run, promoted_at=now - timedelta(hours=2)
    )
    # An abuse model's promotion 95 minutes ago renumbered the unchanged text model: v2's
    # window goes on through it.
    ModelVersion.objects.create(
        name="text", version=3, restored_from=v2, is_production=True, promoted_at=now - timedelta(minutes=95)
    )
    held_run = TrainingRun.objects.create(
        dataset=dataset,
        scope="text",
        kind=RunKind.ADAPTATION,
        status=RunStatus.SUCCEEDED,
        report={"suites": _suites(0.90), "auto_promotion": {"promoted": False, "reasons": ["text on SMS: F1"]}},
    )
    # The 4 labelled posts were scored (queued) just now; and scores before v2 (v1's window)
    # and after: 1 of 4 queued. While v2 served: 5 queued of 8.
    for minutes, action in ((170, "queue"), (100, "queue"), (90, "approve"), (80, "remove"), (70, "approve")):
        post = make_post(source, with_score=False)
        Score.objects.create(
            post=post, model_set="x", final_score=0.5, action=action, created_at=now - timedelta(minutes=minutes)
        )

    table = learning_over_time()

    assert table["suites"] == ["SMS test split (bootstrap)"]
    by_run = {row["run"].pk: row for row in table["rows"]}
    assert by_run[promoted_run.pk]["version"].version == 2 and not by_run[promoted_run.pk]["held"]
    assert by_run[promoted_run.pk]["scored"] == 8 and by_run[promoted_run.pk]["queue_rate"] == 5 / 8
    assert by_run[promoted_run.pk]["labels"] == 4 and by_run[promoted_run.pk]["f1_cells"] == [0.97]
    assert by_run[held_run.pk]["held"] and by_run[held_run.pk]["reasons"] == ["text on SMS: F1"]
    assert by_run[held_run.pk]["queue_rate"] is None and old.training_run is None
    client.force_login(admin_user)
    with django_assert_max_num_queries(12):
        page = client.get(reverse("feedback:registry")).content.decode()
    assert f'data-run="{held_run.pk}" data-outcome="held"' in page
    assert f'data-run="{promoted_run.pk}" data-outcome="promoted"' in page and "0.625" in page


# --- the whole path: labels -> trigger -> a real training worker -> a real Triton ---------------


@pytest.mark.integration
def test_n_labels_start_a_round_on_the_training_worker_that_serves_the_new_version(
    adaptation_worker, served, source, moderator
):
    from tests.integration.conftest import wait_until

    registry_sync()
    before = served_version("text_classifier")
    assert before is not None
    label(source, moderator, classifieds(19, seed=21), tag="w1")
    assert not TrainingRun.objects.filter(kind=RunKind.ADAPTATION).exists()

    label(source, moderator, classifieds(1, seed=22), tag="w2")  # the 20th label

    def promoted() -> ModelVersion | None:
        return ModelVersion.objects.filter(name="text", is_production=True, training_run__isnull=False).first()

    version = wait_until(promoted, timeout=300, interval=1.0, message=f"adaptation promoted (log {adaptation_worker})")
    run = version.training_run
    assert run is not None and run.kind == RunKind.ADAPTATION
    assert run.report["adaptation"]["trigger"] == "labels" and run.report["adaptation"]["new_labels"] == 20
    assert "feedback.adapt_text_model" in adaptation_worker.read_text()
    assert version.version == before + 1
    assert get_client().model_versions()["text_classifier"] == str(before + 1)


@pytest.mark.integration
def _tiny_finetune_settings(settings: Any, tmp_path: Any) -> None:
    from modelops.text.tiny import build_tiny_checkpoint

    settings.FEEDBACK_TEXT_BASE = str(build_tiny_checkpoint(tmp_path / "base"))
    settings.FEEDBACK_TEXT_MAX_STEPS = 4
    settings.TEXT_MAX_LENGTH = 32
    settings.ADAPTATION_FINETUNE_MIN_LABELS = 40


@pytest.mark.django_db
def test_a_round_fine_tunes_the_transformer_once_enough_labels_arrived(served, source, moderator, settings, tmp_path):
    """Past ADAPTATION_FINETUNE_MIN_LABELS labels a round fine-tunes the transformer (a tiny one,
    a few steps) instead of copying the served file; the next round, with fewer new labels than
    that, refits the lexical half only."""
    from feedback.services.datasets import artifacts_dir

    _tiny_finetune_settings(settings, tmp_path)
    # A few steps on a tiny model say nothing of forgetting: the check is the next tests'.
    settings.PROMOTION_GATE_MAX_F1_DROP = 1.0
    settings.PROMOTION_GATE_MAX_FPR_RISE = 1.0
    registry_sync()
    bootstrap = ModelVersion.objects.get(name="text", is_production=True)
    served_onnx = (served.repository / "text_classifier" / str(bootstrap.version) / "model.onnx").read_bytes()

    label(source, moderator, classifieds(30, seed=3), tag="few")
    assert adaptation.finetune_due() is False
    label(source, moderator, classifieds(20, seed=4), tag="more")
    assert adaptation.finetune_due() is True
    first = _adapt()
    assert first["status"] in {"promoted", "held"}, first
    run = TrainingRun.objects.get(pk=first["run"])
    assert run.report["adaptation"]["finetuned"] is True and "finetune_held" not in run.report["adaptation"]
    assert first["finetune"]["finetuned"] is True and first["finetune"]["export"]["serves"]
    assert "finetune" in run.report["adaptation"]["seconds"]
    # It was averaged with its start within the forgetting budget, each weight tried recorded.
    interpolation = run.report["adaptation"]["interpolation"]
    assert interpolation["budget"] == settings.ADAPTATION_FINETUNE_FORGET_BUDGET
    assert interpolation["tried"] and interpolation["tried"][0]["alpha"] == 1.0
    assert interpolation["alpha"] in {*(t["alpha"] for t in interpolation["tried"]), None}
    assert first["finetune"]["interpolation"] == interpolation
    candidate = artifacts_dir() / run.candidate_artifacts["text"]
    assert (candidate / "model.onnx").read_bytes() != served_onnx
    written = json.loads((candidate / "serving.json").read_text())
    assert "transformer fine-tuned" in written["reason"]
    # The export's outcome is recorded, and serving.json names a file the candidate holds.
    export = run.report["adaptation"]["export"]
    assert export["serves"] == written["model_file"] and (candidate / written["model_file"]).is_file()
    assert written["lexical_weight"] == run.candidate_metrics["text"]["lexical"]["lexical_weight"]
    # Its int8 export keeps the two lowest layers' feed-forward outputs in float (the tiny model has two).
    graph = onnx.load(str(candidate / "model.int8.onnx")).graph
    produced_by = {o: n.op_type for n in graph.node for o in n.output}
    lin2 = [n for n in graph.node if n.op_type == "MatMul" and "/ffn/lin2/" in n.name]
    assert len(lin2) == 2 and all(produced_by.get(i) != "DequantizeLinear" for n in lin2 for i in n.input)
    assert any(n.op_type == "DequantizeLinear" for n in graph.node)
    # The gate judged it like any round, and the labels it saw no longer count towards the next.
    assert run.report["auto_promotion"]["promoted"] is (first["status"] == "promoted")
    assert adaptation.finetune_due() is False

    label(source, moderator, classifieds(5, seed=5), tag="later")
    second = _adapt()
    later = TrainingRun.objects.get(pk=second["run"])
    assert later.report["adaptation"]["finetuned"] is False


@pytest.mark.django_db
def test_a_fine_tune_that_forgets_the_sms_suite_gives_way_to_the_served_transformer(
    served, source, moderator, settings, tmp_path
):
    """A fine-tuned candidate whose SMS validation F1 falls below the served one by more than the
    gate allows is dropped in the same round: the round goes on with the served transformer
    (its lexical half still learns), records both F1s, and the next fine-tune waits for as many
    labels again. A negative allowance makes any candidate count as forgetting."""
    from feedback.services.datasets import artifacts_dir

    _tiny_finetune_settings(settings, tmp_path)
    settings.PROMOTION_GATE_MAX_F1_DROP = -1.0
    registry_sync()
    bootstrap = ModelVersion.objects.get(name="text", is_production=True)
    served_onnx = (served.repository / "text_classifier" / str(bootstrap.version) / "model.onnx").read_bytes()

    label(source, moderator, classifieds(50, seed=6), tag="forget")
    assert adaptation.finetune_due() is True
    result = _adapt()
    run = TrainingRun.objects.get(pk=result["run"])
    report = run.report["adaptation"]
    assert report["finetuned"] is False
    forgot = report["finetune_forgot"]
    assert set(forgot) == {"sms_validation_f1", "served_sms_validation_f1"}
    assert all(0.0 <= v <= 1.0 for v in forgot.values())
    # The command's output says why, and what averaging the fine-tune with its start measured.
    assert result["finetune"] == {
        "finetuned": False,
        "finetune_forgot": forgot,
        "interpolation": report["interpolation"],
    }
    tried = [t["alpha"] for t in report["interpolation"]["tried"]]
    assert tried[0] == 1.0 and tried == sorted(tried, reverse=True)
    # Both judged against the served text score on the same split.
    assert report["interpolation"]["reference_f1"] == pytest.approx(forgot["served_sms_validation_f1"], abs=1e-4)
    candidate = artifacts_dir() / run.candidate_artifacts["text"]
    assert (candidate / "model.onnx").read_bytes() == served_onnx
    assert adaptation.finetune_due() is False


@pytest.mark.django_db
def test_a_fine_tune_the_gate_would_hold_gives_way_to_the_round_without_it(
    served, source, moderator, settings, tmp_path, monkeypatch
):
    """A fine-tune that passes the round's own forgetting check but that the gate holds does not
    take the round's lexical half and familiarity down with it: the round is built and judged
    again without it, the held fine-tune's reasons and suites are recorded, and the next
    fine-tune waits for as many labels again. A negative allowance makes the gate hold every
    candidate; the forgetting check is told the fine-tune kept its F1 (None, its 'kept' answer)."""
    from feedback.services.datasets import artifacts_dir

    _tiny_finetune_settings(settings, tmp_path)
    settings.PROMOTION_GATE_MAX_F1_DROP = -1.0
    monkeypatch.setattr(adaptation, "finetune_forgetting", lambda *_args, **_kwargs: None)
    registry_sync()
    bootstrap = ModelVersion.objects.get(name="text", is_production=True)
    served_onnx = (served.repository / "text_classifier" / str(bootstrap.version) / "model.onnx").read_bytes()

    label(source, moderator, classifieds(50, seed=7), tag="held")
    result = _adapt()
    run = TrainingRun.objects.get(pk=result["run"])
    report = run.report["adaptation"]
    assert result["status"] == "held"
    assert report["finetuned"] is False
    held = report["finetune_held"]
    # Against the production of the day and, as the gate's first comparison recorded it, the suite's reference.
    assert any("vs production" in r for r in held["reasons"])
    assert all("vs production" in r or "vs the suite's reference" in r for r in held["reasons"])
    assert "SMS test split (bootstrap)" in held["suite_f1"]
    assert held["interpolation"]["tried"] and held["export"]["serves"]
    # The blend the held candidate was judged with; the summary names the one kept.
    assert set(held["blend"]) == {"lexical_weight", "label_multiplier", "c"}
    assert result["blend"] == report["blend"]["chosen"]
    assert report["seconds"]["held_finetune_round"] > 0
    assert result["finetune"]["finetune_held"] == held
    # The candidate judged last is the served transformer with the refitted lexical half.
    candidate = artifacts_dir() / run.candidate_artifacts["text"]
    assert (candidate / "model.onnx").read_bytes() == served_onnx
    assert "transformer unchanged" in json.loads((candidate / "serving.json").read_text())["reason"]
    assert adaptation.finetune_due() is False


def _gate_holding_fine_tunes(monkeypatch: Any) -> None:
    """The gate holds any fine-tuned candidate and judges the others as it would."""
    from feedback.services import gate

    real = gate.gate_reasons

    def reasons(report: dict[str, Any]) -> list[str]:
        if (report.get("adaptation") or {}).get("finetuned"):
            return ["SMS test split (bootstrap): F1 0.90 vs production 0.97"]
        return real(report)

    monkeypatch.setattr(gate, "gate_reasons", reasons)


@pytest.mark.django_db
def test_the_round_without_a_held_fine_tune_is_promoted_when_the_gate_passes_it(
    served, source, moderator, settings, tmp_path, monkeypatch
):
    """The gate holds the fine-tuned candidate and passes the one built again without it: that
    one is promoted, its served text model is the served transformer with the refitted lexical
    half, and the held fine-tune's reasons stay on the promoted run's report."""
    _tiny_finetune_settings(settings, tmp_path)
    settings.PROMOTION_GATE_MAX_F1_DROP = 1.0
    settings.PROMOTION_GATE_MAX_FPR_RISE = 1.0
    monkeypatch.setattr(adaptation, "finetune_forgetting", lambda *_args, **_kwargs: None)
    _gate_holding_fine_tunes(monkeypatch)
    registry_sync()
    bootstrap = ModelVersion.objects.get(name="text", is_production=True)
    served_onnx = (served.repository / "text_classifier" / str(bootstrap.version) / "model.onnx").read_bytes()

    label(source, moderator, classifieds(50, seed=8), tag="retry")
    result = _adapt()
    assert result["status"] == "promoted", result
    run = TrainingRun.objects.get(pk=result["run"])
    assert run.report["adaptation"]["finetuned"] is False
    assert run.report["adaptation"]["finetune_held"]["reasons"] == [
        "SMS test split (bootstrap): F1 0.90 vs production 0.97"
    ]
    assert "retry" not in run.report["adaptation"]["finetune_held"]
    promoted = ModelVersion.objects.get(name="text", is_production=True)
    assert promoted.version == bootstrap.version + 1
    folder = served.repository / "text_classifier" / str(promoted.version)
    assert (folder / "model.onnx").read_bytes() == served_onnx
    assert "transformer unchanged" in json.loads((folder / "serving.json").read_text())["reason"]
    assert adaptation.finetune_due() is False


@pytest.mark.django_db
def test_a_held_fine_tune_is_not_built_again_when_that_would_pass_the_time_limit(
    served, source, moderator, settings, tmp_path, monkeypatch
):
    """Under a time limit already spent (the task's soft limit, here one second), the held
    fine-tuned candidate stays the round's: the gate holds the round, the report says why nothing
    was built again, and the next round, without a fine-tune, is the one that learns the labels."""
    _tiny_finetune_settings(settings, tmp_path)
    monkeypatch.setattr(adaptation, "finetune_forgetting", lambda *_args, **_kwargs: None)
    _gate_holding_fine_tunes(monkeypatch)
    registry_sync()

    label(source, moderator, classifieds(50, seed=9), tag="late")
    result = adaptation.adaptation_round(trigger="schedule", force=True, time_limit_s=1.0)
    assert result["status"] == "held", result
    report = TrainingRun.objects.get(pk=result["run"]).report["adaptation"]
    assert report["finetuned"] is True
    assert report["finetune_held"]["retry"].startswith("skipped: about ")
    assert "held_finetune_round" not in report["seconds"]
    assert adaptation.finetune_due() is False

    label(source, moderator, classifieds(2, seed=10), tag="next")
    assert TrainingRun.objects.get(pk=_adapt()["run"]).report["adaptation"]["finetuned"] is False


@pytest.mark.django_db
def test_a_round_killed_after_its_fine_tune_started_counts_as_one_tried(
    served, source, moderator, settings, monkeypatch
):
    """A round killed by its time limit (or failing otherwise) once its fine-tune started is a
    failed run that tried: the next round does not start the same fine-tune again."""
    from celery.exceptions import SoftTimeLimitExceeded

    settings.ADAPTATION_FINETUNE_MIN_LABELS = 40
    registry_sync()

    def killed(**_kwargs: Any) -> dict[str, Any]:
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(adaptation, "_finetuned_candidate", killed)
    label(source, moderator, classifieds(50, seed=11), tag="killed")
    assert adaptation.finetune_due() is True
    result = adaptation.adaptation_round(trigger="labels", force=True)
    assert result["status"] == "failed", result
    run = TrainingRun.objects.get(pk=result["run"])
    assert run.status == RunStatus.FAILED and "SoftTimeLimitExceeded" in run.error
    assert run.report["adaptation"]["finetune_started"] is True
    assert adaptation.finetune_due() is False

    calls: list[bool] = []

    def candidate(*, run: TrainingRun, finetune: bool) -> dict[str, Any]:
        calls.append(finetune)
        raise RuntimeError("not needed here")

    monkeypatch.setattr(adaptation, "adaptation_candidate", candidate)
    adaptation.adaptation_round(trigger="labels", force=True)
    assert calls == [False]


@pytest.mark.django_db
def test_a_round_that_fails_before_its_fine_tune_started_leaves_the_fine_tune_due(
    served, source, moderator, settings, monkeypatch
):
    """A failure before the fine-tune (the data, the evaluation suites) is no fine-tune tried:
    the next round fine-tunes."""
    settings.ADAPTATION_FINETUNE_MIN_LABELS = 40
    registry_sync()

    def broken(*, run: TrainingRun, finetune: bool) -> dict[str, Any]:
        raise RuntimeError("suites unavailable")

    monkeypatch.setattr(adaptation, "adaptation_candidate", broken)
    label(source, moderator, classifieds(50, seed=12), tag="early")
    result = adaptation.adaptation_round(trigger="labels", force=True)
    assert result["status"] == "failed", result
    assert "finetune_started" not in TrainingRun.objects.get(pk=result["run"]).report["adaptation"]
    assert adaptation.finetune_due() is True


def test_a_served_blend_weight_of_zero_is_the_reference_the_round_chooses_against(tmp_path, monkeypatch):
    """A served model that serves its transformer alone (lexical weight 0) is judged as such:
    the lexical refit starts from weight 0, not the default."""
    from types import SimpleNamespace

    from modelops.text import adapt, baseline, inference

    served = SimpleNamespace(lexical=object(), lexical_weight=0.0, transformer_rows=lambda texts: texts)
    monkeypatch.setattr(inference, "OnnxTextClassifier", lambda _out_dir: served)
    seen: dict[str, Any] = {}

    def fit(**kwargs: Any) -> Any:
        seen.update(kwargs)
        return SimpleNamespace(lexical="refitted")

    monkeypatch.setattr(adapt, "fit_adapted_text", fit)
    monkeypatch.setattr(baseline, "save_lexical", lambda lexical, out_dir: None)
    adaptation._fit_lexical_half(tmp_path, [], replay_validation=[], labels=[])
    assert seen["served_weight"] == 0.0 and seen["served_lexical"] is served.lexical


def test_a_served_model_without_a_lexical_half_leaves_the_candidate_without_one(tmp_path, monkeypatch):
    """The candidate is judged as served: with no served lexical half, the one train_text_candidate
    fitted goes, and serving.json keeps its weight (the classifier ignores it without a file)."""
    import contextlib
    from types import SimpleNamespace

    from feedback.services import text
    from modelops.text.baseline import LEXICAL_FILE

    @contextlib.contextmanager
    def served_without_lexical() -> Any:
        yield SimpleNamespace(lexical=None, model_dir=tmp_path / "served", lexical_weight=0.5)

    monkeypatch.setattr(text, "production_text_classifier", served_without_lexical)
    out = tmp_path / "candidate"
    out.mkdir()
    (out / LEXICAL_FILE).write_bytes(b"the candidate's own")
    serving = {"model_file": "model.onnx", "lexical_weight": 0.3}
    (out / "serving.json").write_text(json.dumps(serving))
    adaptation.keep_served_lexical(out_dir=out)
    assert not (out / LEXICAL_FILE).exists()
    assert json.loads((out / "serving.json").read_text()) == serving


def test_a_candidate_from_an_int8_served_version_names_the_file_it_holds(tmp_path):
    """Publish stores the served int8 file as model.onnx while serving.json keeps its artifact
    name; the round's candidate must name the file it has, or it cannot be scored."""
    clf, tok, out = tmp_path / "clf", tmp_path / "tok", tmp_path / "out"
    clf.mkdir()
    tok.mkdir()
    (clf / "model.onnx").write_bytes(b"onnx")
    (clf / "serving.json").write_text(json.dumps({"model_file": "model.int8.onnx", "max_length": 32}))
    (tok / "tokenizer.json").write_text("{}")
    serving = adaptation.candidate_from_served(clf_dir=clf, tok_dir=tok, out_dir=out)
    assert serving["model_file"] == "model.onnx"
    assert json.loads((out / "serving.json").read_text())["model_file"] == "model.onnx"
    assert (out / "model.onnx").read_bytes() == b"onnx" and (out / "tokenizer.json").is_file()


def test_the_fine_tune_weighs_each_class_of_the_labels_to_half_and_leaves_the_replay_alone() -> None:
    rows = [
        *({"label": "spam", "origin_of_row": "review"} for _ in range(8)),
        *({"label": "ham", "origin_of_row": "review"} for _ in range(2)),
        {"label": "ham", "origin_of_row": "bootstrap"},
        {"label": "spam", "origin_of_row": "bootstrap"},
    ]
    weights = [1.0] * 10 + [0.4, 0.4]
    out = adaptation.class_balanced_weights(rows, weights)
    assert sum(out[:8]) == pytest.approx(5.0) and sum(out[8:10]) == pytest.approx(5.0)
    assert out[10:] == [0.4, 0.4]
    one_class = rows[:8] + rows[10:]
    assert adaptation.class_balanced_weights(one_class, [1.0] * 10) == [1.0] * 10
    # One legitimate label among 39 violations: raised at most MAX_CLASS_FACTOR times.
    lone = [{"label": "spam", "origin_of_row": "review"}] * 39 + [{"label": "ham", "origin_of_row": "review"}]
    assert adaptation.class_balanced_weights(lone, [1.0] * 40)[-1] == adaptation.MAX_CLASS_FACTOR
