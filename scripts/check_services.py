"""Fail fast, with a readable message, when the PostgreSQL or Redis the tests need is down.
Creates the configured PostgreSQL database when it does not exist yet (management commands
such as `makemigrations --check` connect to it; pytest uses its own test_ database).

Usage: DJANGO_SETTINGS_MODULE=config.settings.test python scripts/check_services.py"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")


def main() -> int:
    import django
    import psycopg
    import redis
    from django.conf import settings
    from psycopg import sql

    django.setup()
    db = settings.DATABASES["default"]
    failures: list[str] = []
    if db["ENGINE"] == "django.db.backends.postgresql":
        try:
            with psycopg.connect(
                host=db["HOST"] or "127.0.0.1",
                port=db["PORT"] or 5432,
                user=db["USER"],
                password=db["PASSWORD"] or None,
                dbname="postgres",
                connect_timeout=3,
                autocommit=True,
            ) as conn:
                exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]]).fetchone()
                if not exists:
                    conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db["NAME"])))
                    print(f"PostgreSQL database {db['NAME']!r} created")
            print(f"PostgreSQL reachable at {db['HOST']}:{db['PORT']}")
        except psycopg.OperationalError as exc:
            failures.append(f"PostgreSQL unreachable at {db['HOST']}:{db['PORT']}: {exc}")
    for name, url in (("broker", settings.CELERY_BROKER_URL), ("cache", settings.CACHES["default"]["LOCATION"])):
        try:
            redis.Redis.from_url(url, socket_connect_timeout=3).ping()
            print(f"Redis ({name}) reachable at {url}")
        except redis.RedisError as exc:
            failures.append(f"Redis ({name}) unreachable at {url}: {exc}")
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
