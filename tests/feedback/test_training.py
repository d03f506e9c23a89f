from __future__ import annotations

import random

import pytest
from django.core.exceptions import PermissionDenied

from core.errors import Conflict
from feedback.models import RunStatus, TrainingRun
from feedback.services.datasets import dataset_snapshot
from feedback.services.training import training_run_execute, training_run_start
from tests.feedback.conftest import decide, make_post

pytestmark = pytest.mark.django_db


def label_posts(source, moderator, *, authors: int, per_author: int = 2, seed: int = 1) -> None:
    rng = random.Random(seed)
    for a in range(authors):
        spammy = rng.random() < 0.4
        for i in range(per_author):
            post = make_post(source, author=f"u{seed}-{a}", text=f"text {a}-{i}", spammy=spammy, rng=rng)
            decide(post, moderator, "spam" if spammy else "ham")


@pytest.fixture
def dataset(source, moderator, admin_user):
    label_posts(source, moderator, authors=100)
    return dataset_snapshot(created_by=admin_user)


def test_only_admins_start_runs(dataset, moderator):
    with pytest.raises(PermissionDenied):
        training_run_start(dataset=dataset, scope="tabular", started_by=moderator)
    assert TrainingRun.objects.count() == 0


def test_one_run_at_a_time(dataset, admin_user, django_capture_on_commit_callbacks, monkeypatch):
    monkeypatch.setattr("feedback.services.training._enqueue", lambda run_id: None)
    training_run_start(dataset=dataset, scope="tabular", started_by=admin_user)
    with pytest.raises(Conflict):
        training_run_start(dataset=dataset, scope="tabular", started_by=admin_user)


def test_tabular_run_without_production(dataset, admin_user, artifacts_dir, settings, tmp_path):
    settings.TRITON_MODEL_REPOSITORY = tmp_path / "empty-repo"
    run = TrainingRun.objects.create(dataset=dataset, scope="tabular", started_by=admin_user)
    run = training_run_execute(run_id=run.pk)
    assert run.status == RunStatus.SUCCEEDED, run.error
    final = run.candidate_metrics["tabular"]["final"]
    assert final["n"] > 20 and final["pr_auc"] > 0.8
    assert run.production_metrics["tabular"] is None
    assert run.report["guarded"]["tabular"]["better_on_all"] is False
    out = artifacts_dir / run.candidate_artifacts["tabular"]
    assert {p.name for p in out.iterdir()} >= {"link.json", "behaviour.json", "fusion.json", "metrics.json"}
    assert run.progress == 1.0 and "evaluation stored" in run.log
    # Running the task again leaves the finished run as it is.
    assert training_run_execute(run_id=run.pk).finished_at == run.finished_at


def test_failing_run_reports_why(source, moderator, admin_user):
    label_posts(source, moderator, authors=4, seed=9)
    ds = dataset_snapshot(created_by=admin_user)
    run = TrainingRun.objects.create(dataset=ds, scope="tabular", started_by=admin_user)
    run = training_run_execute(run_id=run.pk)
    assert run.status == RunStatus.FAILED
    assert "test split" in run.error and run.finished_at is not None
    assert run.candidate_artifacts == {}
