"""Fault-test helpers: a sustained ingest load in a background thread, private Redis and
PostgreSQL servers that a test may kill and restart (never the machine's shared ones), and the
checks every fault test ends with. The Celery worker, the Triton test server and the test
database wiring come from tests/integration/conftest.py and tests/fixtures/triton.py."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.fixtures.triton import free_ports
from tests.integration.conftest import (  # noqa: F401 - fixtures re-exported for tests/faults
    api,
    module_worker,
    pipeline_db,
    start_worker,
    wait_until,
    worker,
)


def postgres_bindir() -> Path:
    """PostgreSQL's server programs (initdb, postgres, pg_ctl): `pg_config --bindir` first
    (Debian keeps them off PATH, in a versioned directory), else wherever PATH has initdb."""
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        found = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False).stdout.strip()
        if found and (Path(found) / "initdb").exists():
            return Path(found)
    initdb = shutil.which("initdb")
    if initdb is None:
        raise RuntimeError("PostgreSQL's initdb is neither in `pg_config --bindir` nor on PATH")
    return Path(initdb).parent


PG_BIN = postgres_bindir()
REDIS_SERVER = shutil.which("redis-server") or "redis-server"


def post_body(run: str, n: int) -> dict[str, Any]:
    return {
        "external_id": f"fault-{run}-{n}",
        "text": f"Win a free phone number {n}, click now!" if n % 2 else f"See you at lunch, {n}",
        "url": f"https://promo{n % 3}.example.com/win?ref={n}" if n % 2 else "",
        "author": {"external_id": f"u-{n % 5}", "account_created_at": "2026-11-01T08:00:00Z"},
        "ip": f"198.51.100.{n % 250 + 1}",
        "journey": [
            {"step": "open_composer", "at": "2026-11-21T10:00:00Z"},
            {"step": "submit", "at": "2026-11-21T10:00:03Z"},
        ],
        "created_at": "2026-11-21T10:00:03Z",
    }


@dataclass
class Outcome:
    status: int
    retry_after: str | None
    post_id: int | None
    error: str = ""


@dataclass
class IngestLoad:
    """POSTs one post at a time at `rate` per second until stopped (or `max_posts`), recording
    every response. `send(body) -> Outcome` does one request (test client or HTTP)."""

    send: Callable[[dict[str, Any]], Outcome]
    rate: float = 8.0
    max_posts: int = 400
    on_exit: Callable[[], None] | None = None
    outcomes: list[Outcome] = field(default_factory=list)
    run: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> IngestLoad:
        self._thread = threading.Thread(target=self._loop, name="ingest-load", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        started = time.monotonic()
        try:
            for n in range(self.max_posts):
                if self._stop.wait(max(0.0, started + n / self.rate - time.monotonic())):
                    return
                try:
                    self.outcomes.append(self.send(post_body(self.run, n)))
                except Exception as exc:  # a transport error is an outcome too, not a crash of the load
                    self.outcomes.append(Outcome(status=0, retry_after=None, post_id=None, error=repr(exc)))
        finally:
            if self.on_exit is not None:
                self.on_exit()

    def wait_for(self, count: int, timeout: float = 60.0) -> None:
        """Block until `count` more requests were answered (the load is really running)."""
        target = len(self.outcomes) + count
        wait_until(lambda: len(self.outcomes) >= target, timeout=timeout, message=f"{count} more ingest requests")

    def stop(self, timeout: float = 60.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout)
            assert not self._thread.is_alive(), "the ingest thread did not stop"

    @property
    def accepted(self) -> list[int]:
        return [o.post_id for o in self.outcomes if 200 <= o.status < 300 and o.post_id is not None]

    def assert_no_5xx_but_503(self) -> None:
        bad = [o for o in self.outcomes if o.status == 0 or (o.status >= 500 and o.status != 503)]
        assert not bad, f"{len(bad)} requests failed: {bad[:5]}"
        unavailable = [o for o in self.outcomes if o.status == 503]
        assert all(o.retry_after and o.retry_after.isdigit() for o in unavailable), unavailable[:5]


def client_sender(client: Any) -> Callable[[dict[str, Any]], Outcome]:
    """Requests through Django's test client (full middleware/DRF stack, this process)."""
    client.raise_request_exception = False  # a 500 is an outcome to assert on, not an exception

    def send(body: dict[str, Any]) -> Outcome:
        response = client.post("/api/v1/posts", body, format="json")
        post_id = response.json().get("id") if response.status_code < 300 else None
        return Outcome(response.status_code, response.get("Retry-After"), post_id)

    return send


def close_thread_connections() -> None:
    from django.db import connections

    connections.close_all()


# --- private Redis -----------------------------------------------------------------------
@dataclass
class PrivateRedis:
    port: int
    workdir: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def ping(self) -> bool:
        try:
            return bool(redis.Redis.from_url(self.url, socket_connect_timeout=0.5).ping())
        except redis.RedisError:
            return False

    def start(self) -> None:
        assert not self.ping(), f"something already listens on {self.port}"
        log = (self.workdir / "redis.log").open("ab")
        self.proc = subprocess.Popen(
            [
                REDIS_SERVER,
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
                "--daemonize",
                "no",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        wait_until(self.ping, timeout=20, message=f"private redis on {self.port}")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a paused server dies too
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def pause(self) -> None:
        """SIGSTOP: connections are still accepted by the kernel, nothing is read or answered
        (a hung server, as its clients see it)."""
        assert self.proc is not None and self.proc.poll() is None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    [port] = free_ports(1)
    server = PrivateRedis(port=port, workdir=tmp_path)
    server.start()
    yield server
    server.kill()


# --- private PostgreSQL ------------------------------------------------------------------
def as_postgres(*argv: str) -> list[str]:
    """PostgreSQL refuses to run as root: drop to the postgres user when we are root."""
    if os.geteuid() != 0:
        return list(argv)
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", *argv]


@dataclass
class PrivatePostgres:
    """A throw-away cluster (initdb into a temp dir, trust auth, fsync off) on its own port."""

    port: int
    datadir: Path
    proc: subprocess.Popen[bytes] | None = None

    def init(self) -> None:
        subprocess.run(
            [
                *as_postgres(
                    str(PG_BIN / "initdb"), "-D", str(self.datadir), "-U", "postgres", "--auth=trust", "-E", "UTF8"
                ),
                "--no-sync",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )

    def ready(self) -> bool:
        done = subprocess.run(
            [str(PG_BIN / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)], check=False, timeout=10
        )
        return done.returncode == 0

    def start(self) -> None:
        log = (self.datadir.parent / "postgres.log").open("ab")
        self.proc = proc = subprocess.Popen(
            [
                *as_postgres(str(PG_BIN / "postgres"), "-D", str(self.datadir), "-p", str(self.port)),
                "-k",
                str(self.datadir),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "max_connections=50",
                "-c",
                "shared_buffers=16MB",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        wait_until(
            lambda: self.ready() or proc.poll() is not None,
            timeout=60,
            message="private postgres ready",
            interval=0.2,
        )
        assert self.proc.poll() is None, (self.datadir.parent / "postgres.log").read_text()[-2000:]

    def stop(self, *, mode: signal.Signals = signal.SIGINT) -> None:
        """SIGINT = PostgreSQL's fast shutdown (pg_ctl -m fast): clients are disconnected."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(mode)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"


@pytest.fixture
def private_postgres() -> Iterator[PrivatePostgres]:
    root = Path(tempfile.mkdtemp(prefix="faults-pg-"))
    datadir = root / "data"
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    [port] = free_ports(1)
    server = PrivatePostgres(port=port, datadir=datadir)
    server.init()
    server.start()
    yield server
    server.stop()
    with contextlib.suppress(OSError):
        shutil.rmtree(root)
