"""Real services for the pipeline's integration tests: a Celery worker subprocess (celery -A
config worker) on the real Redis broker, connected to pytest-django's test database
(test_mod_<you>, committed data via transactional_db), and the real Triton test server from
tests/fixtures/triton.py. Waits are on conditions with timeouts, never bare sleeps."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from scoring.models import DecisionPolicy
from scoring.services.policy import policy_active, policy_create_version
from tests.factories import SourceFactory, create_api_key
from tests.redis_keys import clear_cache_keys, clear_redis

REPO = Path(__file__).resolve().parents[2]
CELERY = str(Path(sys.executable).with_name("celery"))


def wait_until(predicate: Callable[[], Any], *, timeout: float, message: str, interval: float = 0.1) -> Any:
    """Poll `predicate` until it returns a truthy value; fail with `message` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s: {message}")
        time.sleep(interval)


def _db_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


@dataclass
class CeleryWorker:
    log_path: Path
    env: dict[str, str]
    concurrency: int = 2
    proc: subprocess.Popen[bytes] | None = None
    name: str = field(default_factory=lambda: f"pipeline-it-{uuid.uuid4().hex[:8]}")

    def start(self, *, timeout: float = 60.0) -> CeleryWorker:
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = self.log_path.open("ab")
        self.proc = proc = subprocess.Popen(
            [
                CELERY,
                "-A",
                "config",
                "worker",
                "--pool=prefork",
                f"--concurrency={self.concurrency}",
                "-O",
                "fair",
                "--loglevel=INFO",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-n",
                f"{self.name}@%h",
            ],
            cwd=REPO,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: kill() takes the children too
        )
        log.close()
        wait_until(
            lambda: " ready." in self.log_path.read_text(errors="replace")[offset:] or proc.poll() is not None,
            timeout=timeout,
            message=f"celery worker ready (log {self.log_path})",
        )
        assert self.proc.poll() is None, self.log_tail()
        return self

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and pool children): no cleanup, no acks."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.kill()


def flush_redis() -> None:
    """Empty this run's queues and cache keys: no message from an earlier run leaks in (only
    the project's own keys: tests/redis_keys.py)."""
    clear_redis()


def worker_environment(triton_server: Any) -> dict[str, str]:
    config = triton_server.config
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": _db_url(),  # the test database (test_mod_<you>), not mod_<you>
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "CACHE_URL": settings.CACHES["default"]["LOCATION"],
            "CACHE_KEY_PREFIX": settings.CACHES["default"].get("KEY_PREFIX", ""),
            "TRITON_URL": triton_server.grpc_url,
            "TRITON_PROTOCOL": "grpc",
            "TRITON_HTTP_PORT": str(config.http_port),
            "TRITON_GRPC_PORT": str(config.grpc_port),
            "TRITON_METRICS_PORT": str(config.metrics_port),
            "TRITON_TIMEOUT_S": "5",
            # Retry quickly in tests (production: 60 s cap).
            "SCORING_RETRY_BACKOFF_MAX": "2",
            "WEBHOOK_RETRY_BACKOFF_MAX": "2",
            "CONN_MAX_AGE": "0",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


@pytest.fixture(scope="module")
def module_worker(
    django_db_setup: None, triton_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CeleryWorker]:
    """One worker for a module's tests (starting one costs seconds)."""
    flush_redis()
    worker = CeleryWorker(
        log_path=tmp_path_factory.mktemp("worker") / "worker.log", env=worker_environment(triton_server)
    )
    worker.start()
    yield worker
    worker.stop()
    flush_redis()


@pytest.fixture
def pipeline_db(transactional_db: None, triton_settings: Any) -> None:
    """Committed data the worker can see, and this process's settings on the test Triton."""
    clear_cache_keys()
    policy_active()  # a flushed test database has lost the migration's v1 row: recreate it


@pytest.fixture
def worker(pipeline_db: None, module_worker: CeleryWorker) -> CeleryWorker:
    return module_worker


@pytest.fixture
def start_worker(pipeline_db: None, triton_server: Any, tmp_path: Path) -> Iterator[Callable[..., CeleryWorker]]:
    """Workers private to one test (e.g. to SIGKILL one); stopped at the end of the test."""
    flush_redis()
    started: list[CeleryWorker] = []
    base_env = worker_environment(triton_server)

    def start(concurrency: int = 2, **env: str) -> CeleryWorker:
        worker = CeleryWorker(
            log_path=tmp_path / f"worker{len(started)}.log", env={**base_env, **env}, concurrency=concurrency
        )
        started.append(worker)
        return worker.start()

    yield start
    for worker in started:
        worker.stop()
    flush_redis()


@dataclass
class Api:
    client: Any
    source: Any

    def post(self, path: str, data: Any, **kwargs: Any) -> Any:
        return self.client.post(f"/api/v1/{path}", data, format="json", **kwargs)


@pytest.fixture
def api(pipeline_db: None) -> Api:
    from rest_framework.test import APIClient

    source = SourceFactory()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {create_api_key(source)}")
    return Api(client=client, source=source)


def set_policy(*, remove: float, approve: float, escalate: float = 1.0) -> DecisionPolicy:
    # Escalation off by default: these tests pin the two main thresholds' outcomes.
    return policy_create_version(
        remove_threshold=remove, approve_threshold=approve, escalate_threshold=escalate, note="integration test"
    )
