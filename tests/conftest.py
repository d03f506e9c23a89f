"""Session-wide checks: the suite runs against the real PostgreSQL and Redis; an unreachable
service fails the run instead of skipping tests."""

from __future__ import annotations

import pytest
from django.conf import settings

# Fixtures shared by suites that need a real Triton server (triton_server, triton_settings).
pytest_plugins = ["tests.fixtures.triton"]


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
