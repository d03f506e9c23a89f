"""The dashboard reads from a real PostgreSQL streaming replica (config.db_router).

A private primary (tests/faults/conftest.py) gets a copy of the test database; pg_basebackup
makes a hot standby of it on another port, streaming from the primary. gunicorn runs with
DATABASE_URL on the primary and DATABASE_REPLICA_URL on the standby. With the standby's replay
paused, a post ingested through the API is on the primary only: the dashboard's page of it is
404 (read from the replica) while the API, and the dashboard right after a POST of that
browser (read-your-writes), find it on the primary. Once replay resumes, the page shows it."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import requests
from django.contrib.auth.models import Group

from tests.dashboard.dashboard_factories import UserFactory
from tests.factories import create_api_key
from tests.faults.conftest import PG_BIN, PrivatePostgres, as_postgres, post_body
from tests.faults.test_faults import WEB_PORT, copy_test_database, start_web
from tests.fixtures.triton import free_ports
from tests.integration.conftest import wait_until, worker_environment

pytestmark = pytest.mark.integration

BASE = f"http://127.0.0.1:{WEB_PORT}"


@pytest.fixture
def standby(private_postgres: PrivatePostgres) -> Iterator[PrivatePostgres]:
    """A hot standby of `private_postgres`, streaming from it (pg_basebackup -R)."""
    root = Path(tempfile.mkdtemp(prefix="replica-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    datadir = root / "data"
    subprocess.run(
        as_postgres(
            str(PG_BIN / "pg_basebackup"),
            *("-h", "127.0.0.1", "-p", str(private_postgres.port), "-U", "postgres"),
            *("-D", str(datadir), "-R", "-X", "stream", "--no-sync"),
        ),
        check=True,
        capture_output=True,
        timeout=120,
    )
    (port,) = free_ports(1)
    server = PrivatePostgres(port=port, datadir=datadir)
    server.start()
    yield server
    server.stop()
    with contextlib.suppress(OSError):
        shutil.rmtree(root)


def sql(url: str, statement: str, params: list[object] | None = None) -> list[tuple[object, ...]]:
    with psycopg.connect(url.replace("postgres://", "postgresql://"), connect_timeout=5, autocommit=True) as conn:
        cursor = conn.execute(statement, params or [])
        return cursor.fetchall() if cursor.description else []


def logged_in(username: str, password: str) -> requests.Session:
    session = requests.Session()
    session.get(f"{BASE}/accounts/login/", timeout=10)
    response = session.post(
        f"{BASE}/accounts/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        timeout=10,
        allow_redirects=False,
    )
    assert response.status_code == 302, response.text[:500]
    return session


def test_dashboard_reads_from_the_streaming_replica(
    api, triton_server, private_postgres: PrivatePostgres, standby: PrivatePostgres, tmp_path: Path
):
    moderators, _ = Group.objects.get_or_create(name="moderator")
    user = UserFactory(username="replica-mod")
    user.groups.add(moderators)
    raw_key = create_api_key(api.source)
    copy_test_database(private_postgres, "replica_test", tmp_path)
    primary_url, replica_url = private_postgres.url("replica_test"), standby.url("replica_test")
    assert sql(replica_url, "SELECT pg_is_in_recovery()") == [(True,)]
    env = {**worker_environment(triton_server), "DATABASE_URL": primary_url, "DATABASE_REPLICA_URL": replica_url}
    web = start_web(env, tmp_path / "web.log")
    try:
        browser = logged_in("replica-mod", "pw-for-tests-123")
        api_session = requests.Session()
        api_session.headers["Authorization"] = f"Api-Key {raw_key}"

        def ingest(n: int) -> int:
            response = api_session.post(f"{BASE}/api/v1/posts", json=post_body("replica", n), timeout=15)
            assert response.status_code == 201, response.text
            return int(response.json()["id"])

        seen = ingest(1)
        wait_until(
            lambda: sql(replica_url, "SELECT 1 FROM moderation_post WHERE id = %s", [seen]),
            timeout=30,
            message="the standby replays the first post",
        )
        assert browser.get(f"{BASE}/dashboard/posts/{seen}/", timeout=10).status_code == 200

        sql(replica_url, "SELECT pg_wal_replay_pause()")
        unseen = ingest(2)
        assert sql(primary_url, "SELECT 1 FROM moderation_post WHERE id = %s", [unseen]) == [(1,)]
        assert sql(replica_url, "SELECT 1 FROM moderation_post WHERE id = %s", [unseen]) == []
        # The dashboard page reads the replica: the post is not there yet.
        assert browser.get(f"{BASE}/dashboard/posts/{unseen}/", timeout=10).status_code == 404
        # The API reads the primary.
        external_id = post_body("replica", 2)["external_id"]
        assert api_session.get(f"{BASE}/api/v1/posts/{external_id}", timeout=10).status_code == 200
        # A browser that has just posted on the dashboard reads the primary for a while.
        pinned = logged_in("replica-mod", "pw-for-tests-123")
        pinned.post(
            f"{BASE}/dashboard/posts/{seen}/release/",
            data={"csrfmiddlewaretoken": pinned.cookies["csrftoken"]},
            timeout=10,
            allow_redirects=False,
        )
        assert "db_primary_pin" in pinned.cookies
        assert pinned.get(f"{BASE}/dashboard/posts/{unseen}/", timeout=10).status_code == 200

        sql(replica_url, "SELECT pg_wal_replay_resume()")
        wait_until(
            lambda: browser.get(f"{BASE}/dashboard/posts/{unseen}/", timeout=10).status_code == 200,
            timeout=30,
            message="the page shows the post once the standby caught up",
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(web.pid, signal.SIGTERM)
        web.wait(timeout=20)
