from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from feedback.models import DatasetVersion, RunStatus, TrainingRun

pytestmark = pytest.mark.django_db


def test_feedback_cycle_smoke(tmp_path, settings):
    """The cycle command end to end on a small sample (bootstrap bundle built from tiny trees)."""
    from modelops.tiny import cached_tiny_artifacts

    artifacts = cached_tiny_artifacts()
    out = tmp_path / "report.json"
    call_command(
        "feedback_cycle",
        bootstrap_dir=str(artifacts.tabular),
        repository=str(tmp_path / "repo"),
        labels=120,
        bootstrap_rows=300,
        json=str(out),
    )
    run = TrainingRun.objects.get()
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert DatasetVersion.objects.count() == 2  # the imported bootstrap rows, then the snapshot
    report = json.loads(out.read_text())
    assert set(report["candidate"]["tabular"]["by_source"]) == {"bootstrap", "sim"}
