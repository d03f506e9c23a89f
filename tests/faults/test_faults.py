"""Fault tests: a service dies during a sustained ingest and comes back. Afterwards every
accepted post (2xx) is scored exactly once (one Score row, status out of `received`) and no
request got a 5xx other than 503 with Retry-After.

Real services throughout: the Celery worker subprocess and the Triton test server of
tests/integration/conftest.py and tests/fixtures/triton.py, the test database; the Redis and
PostgreSQL that get killed are PRIVATE servers started by the test (tests/faults/conftest.py),
never the machine's shared ones. Waits are on conditions with timeouts."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import requests
from django.conf import settings
from django.db import connection
from django.db.models import Count

from modelops import triton_server as server_control
from moderation.models import Post, PostStatus
from scoring.models import Score
from scoring.tasks import sweep_stuck_posts
from tests.factories import create_api_key
from tests.faults.conftest import (
    PG_BIN,
    IngestLoad,
    Outcome,
    PrivatePostgres,
    PrivateRedis,
    client_sender,
    close_thread_connections,
    wait_until,
)
from tests.integration.conftest import REPO, worker_environment

pytestmark = pytest.mark.integration

RATE = 8.0  # posts/s: modest, the machine is shared
SCORED_TIMEOUT = 120.0
WEB_PORT = 8701


def scored_counts(ids: list[int]) -> dict[int, int]:
    return dict(Score.objects.filter(post_id__in=ids).values_list("post_id").annotate(n=Count("id")))


def assert_scored_exactly_once(ids: list[int]) -> None:
    assert ids, "no post was accepted"
    assert not Post.objects.filter(id__in=ids, status=PostStatus.RECEIVED).exists()
    assert scored_counts(ids) == dict.fromkeys(ids, 1)


def wait_all_scored(
    ids: list[int],
    *,
    log: Callable[[], str],
    sweep_every: float | None = None,
    supervise: Callable[[], None] | None = None,
) -> None:
    """Wait until no accepted post is left in `received`. With `sweep_every`, run the sweeper
    (the beat task, here with no age threshold) that often, as beat would in production;
    `supervise` is called on every poll (restarts a worker that exited, as systemd would)."""
    last_sweep = [0.0]

    def done() -> bool:
        if supervise is not None:
            supervise()
        if sweep_every is not None and time.monotonic() - last_sweep[0] > sweep_every:
            last_sweep[0] = time.monotonic()
            with contextlib.suppress(Exception):  # the broker may still be coming back
                sweep_stuck_posts(older_than_s=1.0)
        return not Post.objects.filter(id__in=ids, status=PostStatus.RECEIVED).exists()

    wait_until(done, timeout=SCORED_TIMEOUT, interval=0.5, message=f"all accepted posts scored\n{log()}")


def in_process_load(api: Any) -> IngestLoad:
    return IngestLoad(send=client_sender(api.client), rate=RATE, on_exit=close_thread_connections)


# --- (a) Triton ----------------------------------------------------------------------------
def shm_files_of_group(pgid: int) -> set[str]:
    """/dev/shm files mapped by the processes of a group (Triton's python-backend stubs):
    SIGKILL leaves them behind, so the test removes exactly these afterwards."""
    files: set[str] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError):
            if os.getpgid(int(entry.name)) != pgid:
                continue
            for line in (entry / "maps").read_text().splitlines():
                path = line.split(maxsplit=5)[-1] if len(line.split()) >= 6 else ""
                if path.startswith("/dev/shm/"):
                    files.add(path.removesuffix(" (deleted)"))
    return files


def test_triton_killed_and_restarted(api, start_worker, triton_server):
    worker = start_worker(concurrency=2)
    config = triton_server.config
    load = in_process_load(api).start()
    try:
        load.wait_for(15)
        pid = server_control.read_pid(config)
        assert pid is not None
        leftovers = shm_files_of_group(pid)
        os.killpg(pid, signal.SIGKILL)
        wait_until(lambda: server_control.read_pid(config) is None, timeout=20, message="triton gone")
        for path in leftovers:
            with contextlib.suppress(OSError):
                os.unlink(path)
        load.wait_for(15)  # ingest goes on while Triton is down
        server_control.start(config, wait_s=120, die_with_parent=True)
        load.wait_for(15)
    finally:
        load.stop()
        if server_control.read_pid(config) is None:  # leave the session's server running
            server_control.start(config, wait_s=120, die_with_parent=True)
    load.assert_no_5xx_but_503()
    wait_all_scored(load.accepted, log=worker.log_tail)
    assert_scored_exactly_once(load.accepted)


# --- (b) Celery worker ---------------------------------------------------------------------
def test_worker_killed_and_replaced(api, start_worker):
    visibility = 4
    env = {"CELERY_VISIBILITY_TIMEOUT": str(visibility), "SCORING_CLAIM_TTL_S": "5"}
    first = start_worker(concurrency=2, **env)
    load = in_process_load(api).start()
    try:
        load.wait_for(20)
        first.kill()  # SIGKILL, main process and pool children: unacked messages stay in Redis
        load.wait_for(int(RATE * (visibility + 1)))  # ingest goes on with no worker at all
        second = start_worker(concurrency=2, **env)
        load.wait_for(15)
    finally:
        load.stop()
    load.assert_no_5xx_but_503()
    wait_all_scored(load.accepted, log=second.log_tail)
    assert_scored_exactly_once(load.accepted)


# --- (c) Redis (broker and cache) ----------------------------------------------------------
@pytest.fixture
def on_private_redis(private_redis: PrivateRedis, settings: Any) -> Iterator[PrivateRedis]:
    """This process (cache, throttle, task publishing) on the private Redis."""
    from config.celery_app import app

    caches = {**settings.CACHES}
    caches["default"] = {**caches["default"], "LOCATION": f"{private_redis.url}/0"}
    settings.CACHES = caches
    old = app.conf.broker_url, app.conf.broker_write_url
    app.conf.broker_url = app.conf.broker_write_url = f"{private_redis.url}/1"
    app._pool = None
    app.amqp._producer_pool = None
    yield private_redis
    app.conf.broker_url, app.conf.broker_write_url = old
    app._pool = None
    app.amqp._producer_pool = None


def test_redis_killed_and_restarted(api, on_private_redis: PrivateRedis, start_worker):
    redis_server = on_private_redis
    env = {"CELERY_BROKER_URL": f"{redis_server.url}/1", "CACHE_URL": f"{redis_server.url}/0"}
    workers = [start_worker(concurrency=2, **env)]

    def supervise() -> None:
        # Celery 5.x/kombu on Redis: when the broker connection drops while the worker holds
        # unacked messages, the worker may exit ("Unrecoverable error: AttributeError: 'NoneType'
        # object has no attribute 'hostname'", celery/kombu#582, #970). In production the
        # process supervisor restarts it; here the test does.
        if workers[-1].proc is not None and workers[-1].proc.poll() is not None:
            workers.append(start_worker(concurrency=2, **env))

    load = in_process_load(api).start()
    try:
        load.wait_for(15)
        redis_server.kill()  # SIGKILL, no persistence: every queued message is lost
        load.wait_for(10)  # ingest answers 201 (post stored, enqueue failure logged)
        redis_server.start()
        load.wait_for(15)
    finally:
        load.stop()
    load.assert_no_5xx_but_503()
    # The lost messages: the sweeper (a beat task every 60 s in production) re-enqueues them.
    wait_all_scored(load.accepted, log=lambda: workers[-1].log_tail(), sweep_every=3.0, supervise=supervise)
    assert_scored_exactly_once(load.accepted)


def test_redis_hung_and_resumed(api, on_private_redis: PrivateRedis, start_worker, caplog):
    """Redis stops answering (SIGSTOP) during a sustained ingest, then resumes. Commands that
    timed out on the client side may still run once it resumes (a claim, a published message):
    scoring must stay exactly-once through that. The circuit breakers (core.redis_breaker,
    ingest's publish breaker) keep each request from waiting out a timeout per Redis call."""
    redis_server = on_private_redis
    env = {"CELERY_BROKER_URL": f"{redis_server.url}/1", "CACHE_URL": f"{redis_server.url}/0"}
    workers = [start_worker(concurrency=2, **env)]

    def supervise() -> None:  # as in test_redis_killed_and_restarted
        if workers[-1].proc is not None and workers[-1].proc.poll() is not None:
            workers.append(start_worker(concurrency=2, **env))

    load = in_process_load(api).start()
    try:
        load.wait_for(15)
        redis_server.pause()
        load.wait_for(16)  # ingest answers 201 while Redis hangs (posts stored, publishes skipped)
        redis_server.resume()
        load.wait_for(15)
    finally:
        redis_server.resume()
        load.stop()
    load.assert_no_5xx_but_503()
    assert "not tried" in caplog.text  # the cache's circuit opened: calls failed fast
    wait_all_scored(load.accepted, log=lambda: workers[-1].log_tail(), sweep_every=3.0, supervise=supervise)
    assert_scored_exactly_once(load.accepted)


# --- (d) PostgreSQL ------------------------------------------------------------------------
def copy_test_database(target: PrivatePostgres, database: str, workdir: Path) -> None:
    """Schema and rows of the test database (migrated, with this test's source and key) into
    the private cluster: much faster than running the migrations again."""
    s = connection.settings_dict
    dump = workdir / "test.dump"
    subprocess.run(
        [
            str(PG_BIN / "pg_dump"),
            "-Fc",
            "-h",
            s["HOST"] or "127.0.0.1",
            "-p",
            str(s["PORT"] or 5432),
            "-U",
            s["USER"],
            "-f",
            str(dump),
            s["NAME"],
        ],
        check=True,
        timeout=120,
    )
    common = ["-h", "127.0.0.1", "-p", str(target.port), "-U", "postgres"]
    subprocess.run([str(PG_BIN / "createdb"), *common, database], check=True, timeout=60)
    subprocess.run(
        [str(PG_BIN / "pg_restore"), *common, "--no-owner", "-d", database, str(dump)], check=True, timeout=120
    )


def start_web(env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    log = log_path.open("ab")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi:application",
            "-b",
            f"127.0.0.1:{WEB_PORT}",
            "-w",
            "1",
            "-k",
            "gthread",
            "--threads",
            "4",
            "--timeout",
            "30",
            "--graceful-timeout",
            "5",
        ],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    log.close()

    def up() -> bool:
        assert proc.poll() is None, log_path.read_text()[-2000:]
        with contextlib.suppress(requests.RequestException):
            return requests.get(f"http://127.0.0.1:{WEB_PORT}/api/v1/posts/none", timeout=2).status_code == 401
        return False

    wait_until(up, timeout=60, interval=0.3, message="gunicorn up")
    return proc


def http_sender(raw_key: str) -> Callable[[dict[str, Any]], Outcome]:
    session = requests.Session()
    session.headers["Authorization"] = f"Api-Key {raw_key}"

    def send(body: dict[str, Any]) -> Outcome:
        response = session.post(f"http://127.0.0.1:{WEB_PORT}/api/v1/posts", json=body, timeout=15)
        post_id = response.json().get("id") if response.status_code < 300 else None
        return Outcome(response.status_code, response.headers.get("Retry-After"), post_id)

    return send


def private_scored_counts(url: str, ids: list[int]) -> tuple[int, dict[int, int]]:
    """(posts still in `received`, Score rows per post) in the private database."""
    with psycopg.connect(url.replace("postgres://", "postgresql://"), connect_timeout=5) as conn:
        received = conn.execute(
            "SELECT count(*) FROM moderation_post WHERE id = ANY(%s) AND status = 'received'", [ids]
        ).fetchone()
        rows = conn.execute(
            "SELECT post_id, count(*) FROM scoring_score WHERE post_id = ANY(%s) GROUP BY post_id", [ids]
        ).fetchall()
    return int(received[0]) if received else -1, {int(post_id): int(n) for post_id, n in rows}


def test_postgres_restarted(api, start_worker, triton_server, private_postgres: PrivatePostgres, tmp_path: Path):
    raw_key = create_api_key(api.source)
    copy_test_database(private_postgres, "faults", tmp_path)
    db_url = private_postgres.url("faults")
    # The worker keeps its connections across tasks as in production (CELERY_DB_REUSE_MAX,
    # CONN_MAX_AGE): the restart cuts them under it, and it must reconnect, not stay broken.
    worker = start_worker(concurrency=2, DATABASE_URL=db_url, CONN_MAX_AGE="60")
    web_env = {**worker_environment(triton_server), "DATABASE_URL": db_url, "CONN_MAX_AGE": "60"}
    web = start_web(web_env, tmp_path / "web.log")
    load = IngestLoad(send=http_sender(raw_key), rate=RATE)
    try:
        load.start()
        load.wait_for(20)
        private_postgres.stop()  # fast shutdown: every connection (web, worker) is cut
        load.wait_for(5)  # answered 503 + Retry-After while the database is down
        private_postgres.start()
        load.wait_for(20)
        load.stop()
        load.assert_no_5xx_but_503()
        assert any(o.status == 503 for o in load.outcomes), "no request saw the database down"
        ids = load.accepted
        assert ids

        def done() -> bool:
            received, _ = private_scored_counts(db_url, ids)
            return received == 0

        wait_until(done, timeout=SCORED_TIMEOUT, interval=0.5, message=f"all scored\n{worker.log_tail()}")
        received, counts = private_scored_counts(db_url, ids)
        assert received == 0 and counts == dict.fromkeys(ids, 1)
    finally:
        load.stop()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(web.pid, signal.SIGTERM)
        web.wait(timeout=20)
    assert settings.DATABASES["default"]["NAME"] != "faults"  # the test database was never touched
