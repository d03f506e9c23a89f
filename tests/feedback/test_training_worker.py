"""A real Celery worker that consumes ONLY the "training" queue runs a retraining run started
from the dashboard service: proves the routing (scoring workers never see training work) and
the live progress on the TrainingRun row."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from feedback.models import RunStatus, TrainingRun
from feedback.services.datasets import dataset_snapshot
from feedback.services.training import training_run_start
from tests.feedback.test_training import label_posts
from tests.integration.conftest import wait_until
from tests.redis_keys import clear_broker_queues

pytestmark = [pytest.mark.integration]
REPO = Path(__file__).resolve().parents[2]


def _db_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


@pytest.fixture
def training_worker(transactional_db, artifacts_dir, tmp_path, settings):
    settings.TRITON_MODEL_REPOSITORY = tmp_path / "no-models-yet"
    clear_broker_queues()
    log_path = tmp_path / "worker.log"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": _db_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "CACHE_URL": settings.CACHES["default"]["LOCATION"],
        "ARTIFACTS_DIR": str(artifacts_dir),
        "TRITON_MODEL_REPOSITORY": str(settings.TRITON_MODEL_REPOSITORY),
        "CONN_MAX_AGE": "0",
        "PYTHONUNBUFFERED": "1",
    }
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("celery")), "-A", "config", "worker", "-Q", "training",
             "--concurrency=1", "--loglevel=INFO", "--without-gossip", "--without-mingle", "--without-heartbeat",
             "-n", "feedback-training@%h"],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    try:
        wait_until(
            lambda: " ready." in log_path.read_text(errors="replace") or proc.poll() is not None,
            timeout=60,
            message="training worker ready",
        )
        assert proc.poll() is None, log_path.read_text()
        yield log_path
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        clear_broker_queues()


def test_run_executes_on_the_training_queue_worker(training_worker, source, moderator, admin_user):
    label_posts(source, moderator, authors=80, seed=31)
    dataset = dataset_snapshot(created_by=admin_user)

    run = training_run_start(dataset=dataset, scope="tabular", started_by=admin_user)

    def finished() -> TrainingRun | None:
        fresh = TrainingRun.objects.get(pk=run.pk)
        return fresh if fresh.is_finished else None

    done = wait_until(finished, timeout=240, interval=0.5, message=f"run finished (log {training_worker})")
    assert done.status == RunStatus.SUCCEEDED, done.error
    assert done.task_id and "feedback.run_training" in training_worker.read_text()
    assert "training the link model" in done.log and done.progress == 1.0
    assert done.candidate_metrics["tabular"]["final"]["n"] > 0
    assert settings.CELERY_TASK_ROUTES["feedback.*"]["queue"] == "training"
