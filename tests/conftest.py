"""Session-wide checks: the suite runs against the real PostgreSQL and Redis; an unreachable
service fails the run instead of skipping tests."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings

# Fixtures shared by suites that need a real Triton server (triton_server, triton_settings).
pytest_plugins = ["tests.fixtures.triton"]


@pytest.fixture(autouse=True)
def no_pending_scoring_kick() -> None:
    """No kick mark left by an earlier test (scoring.workqueue): a test that recorded its
    publish instead of sending it leaves the mark for up to SCORING_KICK_TTL_S, and the next
    test's posts would wait for a task that never comes."""
    from scoring.workqueue import kick_taken

    kick_taken()


@pytest.fixture(autouse=True)
def closed_breakers() -> None:
    """No circuit left open by an earlier test: a test that made Redis or the broker fail
    would otherwise make the next test's cache calls fail fast and its publishes be skipped
    for REDIS_BREAKER_OPEN_S / BROKER_PUBLISH_BREAKER_S."""
    from core import redis_breaker

    redis_breaker.reset()  # the cache's circuits and ingest's publish circuit


@pytest.fixture(scope="session")
def closed_port() -> Iterator[int]:
    """A loopback TCP port of this session's own that refuses every connection: bound, never
    listening, so nothing else (a local `make run`'s Triton on 8011, the web on 8000) can take
    it while the suite runs."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield int(sock.getsockname()[1])
    finally:
        sock.close()


@pytest.fixture(autouse=True)
def no_model_server(settings: Any, closed_port: int) -> None:
    """Tests that need no model server reach none: the Triton settings point at the session's
    closed port, not at the defaults (127.0.0.1:8010-8012), where a developer's `make run` may
    be serving. A test that starts a Triton sets its own (tests/fixtures/triton.py
    triton_settings, which runs after this)."""
    settings.TRITON_URL = f"127.0.0.1:{closed_port}"
    settings.TRITON_URLS = []
    settings.TRITON_GRPC_PORT = settings.TRITON_HTTP_PORT = settings.TRITON_METRICS_PORT = closed_port


def pytest_sessionstart(session: pytest.Session) -> None:
    import psycopg
    import redis

    db = settings.DATABASES["default"]
    if db["ENGINE"] != "django.db.backends.postgresql":
        raise pytest.UsageError("tests run on PostgreSQL; set DATABASE_URL to a postgres:// URL")
    try:
        psycopg.connect(
            host=db["HOST"] or "127.0.0.1",
            port=db["PORT"] or 5432,
            user=db["USER"],
            dbname="postgres",
            connect_timeout=3,
        ).close()
    except psycopg.OperationalError as exc:
        raise pytest.UsageError(f"PostgreSQL unreachable: {exc}") from exc
    try:
        redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        raise pytest.UsageError(f"Redis unreachable at {settings.CELERY_BROKER_URL}: {exc}") from exc
