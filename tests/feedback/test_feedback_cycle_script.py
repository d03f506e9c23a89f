"""scripts/feedback_cycle.py end to end on a small sample: posts in through the API, scored by a
real Celery worker on the real Triton test server, labelled through the decision service, then
a snapshot and a training run compared with the served models (no promotion: the session's
Triton server is shared)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from feedback.models import DatasetVersion, RunStatus, TrainingRun
from moderation.models import Decision, Post, PostStatus
from scoring.models import Score
from tests.integration.conftest import module_worker, pipeline_db, worker  # noqa: F401 - fixtures

pytestmark = [pytest.mark.integration]
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "feedback_cycle.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("feedback_cycle_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_one_cycle_through_the_api_the_worker_and_the_decision_service(worker):  # noqa: F811
    script = _script()
    lines: list[str] = []
    # A fixed run id: the author-hash split is then the same on every run (29 test rows, 9 spam).
    # A random one leaves fewer than the 10 test rows a training run needs about once in 200.
    options = script.CycleOptions(posts=160, campaign_share=0.6, train_here=True, timeout_s=240, run_id="it-cycle-1")
    report = script.run_cycle(options, log=lines.append)

    assert report["status"] == RunStatus.SUCCEEDED, (report["error"], worker.log_tail())
    posts = Post.objects.filter(source__slug=report["source"])
    assert posts.count() == report["posts"] == 160
    assert not posts.filter(status=PostStatus.RECEIVED).exists()
    # Scored by the worker on Triton: every post has a score from the served models.
    assert Score.objects.filter(post__in=posts).exclude(model_versions={}).values("post").distinct().count() == 160
    assert Decision.objects.filter(post__in=posts).count() == 160
    # The campaign's posts share one fresh domain, as the script sends them.
    assert report["campaign_posts"] > 0
    assert posts.filter(link__domain__name__startswith="deals-").count() == report["campaign_posts"]
    run = TrainingRun.objects.get(pk=report["run"])
    assert run.dataset == DatasetVersion.objects.get(version=report["dataset"])
    assert run.dataset.example_count == 160
    assert report["candidate"]["tabular"]["final"]["n"] > 0 and report["production"]["tabular"]["final"]["n"] > 0
    assert any("production" in line and "candidate" in line for line in lines)
