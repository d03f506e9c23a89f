"""The promotion gate with tiny tree models on two synthetic domains.

Domain A: spam shows in the author's behaviour (new accounts, bot-like journeys); links look
alike. Domain B: spam shows in the link (reported domains, shorteners); behaviour looks alike.
Production learns A. A candidate trained on B alone forgets A, and the A suite holds it back; a
candidate trained on the cumulative labels keeps A and is promoted. Publishing writes real
version folders into a private model repository; only Triton's load call is stubbed (the
publish-and-serve path has its own test against a real server: test_promotion_e2e.py).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES
from feedback.models import (
    EvaluationSuite,
    ModelVersion,
    RunStatus,
    SuiteKind,
    SuiteReference,
    TrainingData,
    TrainingRun,
)
from feedback.services.datasets import dataset_import
from feedback.services.promotion import GateHeld, promote_if_better, promote_run, registry_sync
from feedback.services.suites import suite_rows
from feedback.services.training import training_run_execute
from moderation.models import AuditLog

pytestmark = pytest.mark.django_db


def _row(domain: str, spam: bool, i: int, rng: random.Random) -> dict[str, Any]:
    link = {name: rng.random() for name in LINK_FEATURES}
    behaviour = {name: rng.random() for name in BEHAVIOUR_FEATURES}
    link["url_present"] = 1.0
    if domain == "A":  # the signal is in the behaviour
        behaviour["user_age_days"] = rng.uniform(0, 20) if spam else rng.uniform(200, 900)
        behaviour["journey_bot_pattern"] = float(rng.random() < (0.9 if spam else 0.05))
        link["domain_report_count"] = float(rng.randint(0, 3))
    else:  # the signal is in the link
        behaviour["user_age_days"] = rng.uniform(0, 900)
        behaviour["journey_bot_pattern"] = float(rng.random() < 0.3)
        link["domain_report_count"] = float(rng.randint(6, 12) if spam else rng.randint(0, 2))
    return {
        "text": f"{domain} post {i}",
        "label": "spam" if spam else "ham",
        "author_external_id": f"{domain}-author-{i}",
        "features": {"link": link, "behaviour": behaviour},
        # An uninformative frozen text score: the trees must learn from the features.
        "sub_scores": {"text": 0.5},
    }


def _import(domain: str, admin: Any, *, rows: int = 360, seed: int = 0) -> Any:
    rng = random.Random(f"{domain}-{seed}")
    lines = [json.dumps(_row(domain, i % 3 == 0, i, rng)) for i in range(rows)]
    return dataset_import(content="\n".join(lines).encode(), fmt="jsonl", created_by=admin, name=f"domain {domain}")


@pytest.fixture
def repository(settings: Any, tmp_path: Path, monkeypatch: Any) -> Path:
    from modelops.model_repository import publish
    from modelops.tiny import cached_tiny_artifacts

    repo = tmp_path / "repository"
    repo.mkdir()
    artifacts = cached_tiny_artifacts()
    publish(artifacts, repository=repo)
    settings.TRITON_MODEL_REPOSITORY = repo
    loaded: list[str] = []

    def load_everywhere(models: list[str], expected: dict[str, int] | None = None) -> list[str]:
        loaded.extend(models)
        return []

    monkeypatch.setattr("feedback.services.promotion.load_everywhere", load_everywhere)
    registry_sync()
    return repo


def _run(dataset: Any, admin: Any, mode: str) -> TrainingRun:
    run = TrainingRun.objects.create(dataset=dataset, scope="tabular", started_by=admin, training_data=mode)
    run = training_run_execute(run_id=run.pk)
    assert run.status == RunStatus.SUCCEEDED, run.error
    return run


def _a_suite_f1(run: TrainingRun, who: str) -> float:
    entry = next(e for e in run.report["suites"]["tabular"] if e["name"] == "dataset v1 test split")
    return float(entry[who]["f1"])


def test_forgetting_candidate_is_held_and_a_cumulative_one_is_promoted(repository, admin_user):
    dataset_a = _import("A", admin_user)
    first = _run(dataset_a, admin_user, TrainingData.DATASET_ONLY)
    promote_run(run=first, user=admin_user, override_reason="first real model", override_confirmed=True)
    assert ModelVersion.objects.get(name="tabular", is_production=True).training_run == first

    dataset_b = _import("B", admin_user)
    forgetting = _run(dataset_b, admin_user, TrainingData.DATASET_ONLY)
    assert forgetting.report["training_data"]["rows"].keys() == {"dataset"}
    assert _a_suite_f1(forgetting, "candidate") < _a_suite_f1(forgetting, "production") - 0.01
    gate = forgetting.report["gate"]
    assert gate["held"] and {r["suite"] for r in gate["regressions"]} == {"dataset v1 test split"}
    with pytest.raises(GateHeld):
        promote_run(run=forgetting, user=admin_user)
    # Automatic promotion is held back too, and says why.
    TrainingRun.objects.filter(pk=forgetting.pk).update(auto_promote=True)
    assert promote_if_better(run=TrainingRun.objects.get(pk=forgetting.pk)) == []
    reasons = TrainingRun.objects.get(pk=forgetting.pk).report["auto_promotion"]["reasons"]
    assert any("promotion gate" in r and "dataset v1 test split" in r for r in reasons)
    assert ModelVersion.objects.get(name="tabular", is_production=True).training_run == first

    keeping = _run(dataset_b, admin_user, TrainingData.CUMULATIVE)
    assert keeping.report["training_data"]["rows"]["earlier_datasets"]["train"] > 100  # domain A replayed
    assert not keeping.report["gate"]["held"], keeping.report["gate"]
    assert keeping.report["gate"]["suites_compared"] == 2  # both dataset test splits
    (version,) = promote_run(run=keeping, user=admin_user)
    assert version.is_production and version.training_run == keeping
    assert not AuditLog.objects.filter(action="model.promote.gate_override", target_id=str(keeping.pk)).exists()


def test_override_needs_reason_and_confirmation_and_is_audited(repository, admin_user, client):
    dataset_a = _import("A", admin_user)
    first = _run(dataset_a, admin_user, TrainingData.DATASET_ONLY)
    promote_run(run=first, user=admin_user, override_reason="first real model", override_confirmed=True)
    forgetting = _run(_import("B", admin_user), admin_user, TrainingData.DATASET_ONLY)
    assert forgetting.report["gate"]["held"]
    client.force_login(admin_user)
    url = reverse("feedback:run_promote", args=[forgetting.pk])

    page = client.get(url).content.decode()
    assert 'id="gate-held"' in page and "dataset v1 test split" in page and 'class="regression"' in page

    for data in ({"confirm": "on"}, {"override_reason": "accepted for the campaign"}):
        response = client.post(url, data)
        assert response.status_code == 400
        assert not ModelVersion.objects.filter(training_run=forgetting).exists()

    response = client.post(url, {"confirm": "on", "override_reason": "accepted for the campaign"})
    assert response.status_code == 302 and response["Location"] == reverse("feedback:registry")
    assert ModelVersion.objects.get(name="tabular", is_production=True).training_run == forgetting
    log = AuditLog.objects.get(action="model.promote.gate_override", target_id=str(forgetting.pk))
    assert log.actor == admin_user and log.after["reason"] == "accepted for the campaign"
    assert log.before["gate"]["regressions"] and log.before["held_because"]
    # It fell below the v1 suite's reference too (recorded from the first model): the override
    # accepted that floor, so it is cleared and the next comparison holds rounds to this model.
    accepted = {(r["suite_id"], r["bundle"]) for r in log.before["gate"]["regressions"] if r["against"] == "reference"}
    assert accepted
    assert not any(SuiteReference.objects.filter(suite_id=s, bundle=b).exists() for s, b in accepted)
    cleared = [
        log
        for log in AuditLog.objects.filter(action="suite.reference_cleared")
        if log.after["reason"].endswith(f"run #{forgetting.pk}")
    ]
    assert len(cleared) == len(accepted) and {c.actor for c in cleared} == {admin_user}


def test_suites_are_frozen_and_shown_on_the_run_page(repository, admin_user, client, artifacts_dir):
    dataset_a = _import("A", admin_user)
    run = _run(dataset_a, admin_user, TrainingData.CUMULATIVE)
    names = set(EvaluationSuite.objects.values_list("name", flat=True))
    assert names == {"SMS test split (bootstrap)", "dataset v1 test split"}
    sms = EvaluationSuite.objects.get(kind=SuiteKind.BOOTSTRAP)
    assert sms.row_count > 500 and sms.featured_count == 0
    # The tabular models cannot be scored on texts without features: listed, not compared.
    entry = next(e for e in run.report["suites"]["tabular"] if e["name"] == sms.name)
    assert entry["skipped"] == "no rows with features"

    client.force_login(admin_user)
    page = client.get(reverse("feedback:run_detail", args=[run.pk])).content.decode()
    assert 'id="suite-table"' in page and 'data-suite="dataset v1 test split"' in page
    assert "FPR @ remove" in page and "ECE" in page and "<svg" in page and "<script" not in page.split("<svg")[1]

    suite = EvaluationSuite.objects.get(name="dataset v1 test split")
    path = artifacts_dir / suite.path / "rows.jsonl"
    path.write_text(path.read_text().replace('"label":"spam"', '"label":"ham"', 1))
    with pytest.raises(Exception, match="modified on disk"):
        suite_rows(suite)


def test_marking_a_dataset_as_a_suite_keeps_its_texts_out_of_training(repository, admin_user, client):
    held_out = _import("A", admin_user, rows=120, seed=7)
    client.force_login(admin_user)
    response = client.post(reverse("feedback:suite_mark", args=[held_out.version]), {"name": "partner set"})
    assert response.status_code == 302
    suite = EvaluationSuite.objects.get(name="partner set")
    assert suite.kind == SuiteKind.IMPORTED and suite.row_count == 120
    assert AuditLog.objects.filter(action="suite.create", target_id=str(suite.pk)).exists()

    training = _import("B", admin_user)
    run = _run(training, admin_user, TrainingData.CUMULATIVE)
    data = run.report["training_data"]
    # Only the held-out set's train/validation rows would have entered through the labels.
    assert data["dropped_held_out_texts"] > 50
    assert "partner set" in {e["name"] for e in run.report["suites"]["tabular"]}


def _entry(f1_c: float, f1_p: float, fpr_c: float, fpr_p: float) -> dict[str, Any]:
    return {
        "name": "suite",
        "candidate": {"f1": f1_c, "at_remove": {"fpr": fpr_c}},
        "production": {"f1": f1_p, "at_remove": {"fpr": fpr_p}},
    }


@pytest.mark.parametrize(
    ("entry", "held_on"),
    [
        (_entry(0.950, 0.960, 0.010, 0.010), set()),  # F1 down exactly 1 point: tolerated
        (_entry(0.948, 0.960, 0.010, 0.010), {"f1"}),
        (_entry(0.990, 0.960, 0.015, 0.010), set()),  # FPR up exactly 0.5 points: tolerated
        (_entry(0.990, 0.960, 0.016, 0.010), {"at_remove.fpr"}),
        (_entry(0.900, 0.960, 0.050, 0.010), {"f1", "at_remove.fpr"}),
    ],
)
def test_gate_tolerances(entry, held_on, settings):
    from feedback.services.gate import gate_evaluate

    settings.PROMOTION_GATE_MAX_F1_DROP = 0.01
    settings.PROMOTION_GATE_MAX_FPR_RISE = 0.005
    gate = gate_evaluate({"text": [entry, {"name": "skipped", "skipped": "3 usable rows, 0 spam"}]})
    assert {r["metric"] for r in gate["regressions"]} == held_on
    assert gate["held"] is bool(held_on) and gate["suites_compared"] == 1


def test_a_run_whose_every_suite_was_skipped_is_held_unless_there_is_no_production():
    from feedback.services.gate import gate_evaluate, gate_reasons

    entry = _entry(0.990, 0.960, 0.010, 0.010)
    skipped_with_production = {**entry, "skipped": "4 usable rows, 0 spam"}
    gate = gate_evaluate({"text": [skipped_with_production]})
    assert gate["held"] is True and gate["suites_compared"] == 0 and gate["regressions"] == []
    assert gate_reasons({"gate": gate}) == ["no evaluation suite could compare it with production (each was skipped)"]
    first_model = gate_evaluate({"text": [{"name": "sms", "candidate": entry["candidate"], "production": None}]})
    assert first_model["held"] is False and gate_reasons({"gate": first_model}) == []
