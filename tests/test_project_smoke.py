"""Smoke tests of the project itself: settings load, migrations apply on PostgreSQL, the
admin login page renders."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client


def test_test_settings_use_postgresql_and_redis() -> None:
    assert settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
    assert settings.CACHES["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    assert settings.CELERY_BROKER_URL.startswith("redis://")


@pytest.mark.django_db
def test_all_migrations_applied_on_postgresql() -> None:
    assert connection.vendor == "postgresql"
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    assert plan == [], f"unapplied migrations: {plan}"


@pytest.mark.django_db
def test_no_model_changes_without_migrations() -> None:
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


@pytest.mark.django_db
def test_admin_login_page_renders(client: Client) -> None:
    response = client.get("/admin/login/")
    assert response.status_code == 200
    assert b'name="username"' in response.content
    assert b'name="password"' in response.content


@pytest.mark.django_db
def test_admin_index_requires_login(client: Client) -> None:
    response = client.get("/admin/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


@pytest.mark.django_db
def test_unmatched_api_path_answers_the_json_error_shape(client: Client) -> None:
    response = client.get("/api/v1/no-such-endpoint")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": "Not found.", "fields": {}}}


@pytest.mark.django_db
def test_unmatched_page_path_answers_html(client: Client) -> None:
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
