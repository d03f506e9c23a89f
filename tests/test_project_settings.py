"""Settings: production refuses to start without its secrets and services, and Django's
deployment checklist (`check --deploy`) is clean with production settings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PRODUCTION_ENV = {
    "DJANGO_SETTINGS_MODULE": "config.settings.production",
    "DJANGO_READ_DOT_ENV_FILE": "false",  # a developer's .env must not fill the gaps under test
    "SECRET_KEY": "test-deploy-9f8e7d6c5b4a39281706f5e4d3c2b1a0-unguessable-enough-XYZ",
    "ALLOWED_HOSTS": "moderation.example.com",
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/moderation",
    "CELERY_BROKER_URL": "redis://127.0.0.1:6379/2",
    "REDIS_URL": "redis://127.0.0.1:6379/1",
}
_SCRUB = ("DJANGO_", "SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "CELERY_", "REDIS_URL", "CACHE_URL", "DEBUG")


def _run(
    code_or_args: list[str], env_overrides: dict[str, str], drop: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB)}
    env.update(env_overrides)
    if drop:
        env.pop(drop)
    return subprocess.run(
        [sys.executable, *code_or_args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


LOAD = ["-c", "import django; django.setup(); from django.conf import settings; print('DEBUG', settings.DEBUG)"]


def test_production_settings_load_with_their_environment() -> None:
    result = _run(LOAD, PRODUCTION_ENV)
    assert result.returncode == 0, result.stderr
    assert "DEBUG False" in result.stdout


@pytest.mark.parametrize("missing", ["SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL"])
def test_production_refuses_to_start_without(missing: str) -> None:
    result = _run(LOAD, PRODUCTION_ENV, drop=missing)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert missing in result.stderr


def test_check_deploy_is_clean_with_production_settings() -> None:
    result = _run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], PRODUCTION_ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_flags_a_debug_production() -> None:
    """The check above can fail: with DEBUG forced on it reports security.W018."""
    code = (
        "import django, os; django.setup(); from django.conf import settings; settings.DEBUG = True;"
        "from django.core.management import call_command; call_command('check', deploy=True, fail_level='WARNING')"
    )
    result = _run(["-c", code], PRODUCTION_ENV)
    assert result.returncode != 0
    assert "security.W018" in result.stderr + result.stdout


def test_check_deploy_flags_private_webhook_targets() -> None:
    """A production that lets webhooks reach private addresses is flagged (scoring.W001)."""
    result = _run(
        ["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        {**PRODUCTION_ENV, "WEBHOOK_ALLOW_PRIVATE_TARGETS": "true"},
    )
    assert result.returncode != 0
    assert "scoring.W001" in result.stderr + result.stdout


def test_local_defaults_need_no_service() -> None:
    """Embedded defaults: SQLite, and Redis URLs that `make run` points at its private Redis."""
    code = (
        "import django; django.setup(); from django.conf import settings;"
        "print(settings.DATABASES['default']['ENGINE']);"
        "print(settings.DATABASES['default']['OPTIONS']['transaction_mode']);"
        "print(settings.TRITON_HTTP_PORT, settings.TRITON_URL)"
    )
    result = _run(
        ["-c", code], {"DJANGO_SETTINGS_MODULE": "config.settings.local", "DJANGO_READ_DOT_ENV_FILE": "false"}
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[0] == "django.db.backends.sqlite3"
    assert lines[1] == "IMMEDIATE"
    assert lines[2] == "8010 127.0.0.1:8011"


@pytest.mark.parametrize(("rate", "loads"), [("0", True), ("0.5", True), ("1", True), ("-0.1", False), ("1.5", False)])
def test_the_spot_check_rate_is_a_share(rate: str, loads: bool) -> None:
    result = _run(LOAD, {**PRODUCTION_ENV, "SPOT_CHECK_RATE": rate})
    assert (result.returncode == 0) is loads, result.stderr
    if not loads:
        assert "SPOT_CHECK_RATE must lie between 0 and 1" in result.stderr


@pytest.mark.parametrize(
    ("name", "value", "refusal"),
    [
        ("EARNED_APPROVAL_START_FINAL", "1.2", "EARNED_APPROVAL_START_FINAL must lie between 0 and 1"),
        ("EARNED_APPROVAL_START_ABUSE", "-0.1", "EARNED_APPROVAL_START_ABUSE must lie between 0 and 1"),
        ("EARNED_APPROVAL_MAX_SHARE", "2", "EARNED_APPROVAL_MAX_SHARE must lie between 0 and 1"),
        ("EARNED_APPROVAL_MIN_LABELS", "0", "EARNED_APPROVAL_MIN_LABELS, EARNED_APPROVAL_MIN_CHECKS and"),
        ("EARNED_APPROVAL_MIN_CHECKS", "0", "EARNED_APPROVAL_MIN_LABELS, EARNED_APPROVAL_MIN_CHECKS and"),
        ("EARNED_APPROVAL_INTERVAL_S", "0", "EARNED_APPROVAL_INTERVAL_S above 0"),
        ("EARNED_APPROVAL_START_FINAL", "0.1", ""),
    ],
)
def test_the_earned_approval_settings_are_checked(name: str, value: str, refusal: str) -> None:
    result = _run(LOAD, {**PRODUCTION_ENV, name: value})
    assert (result.returncode == 0) is (not refusal), result.stderr
    assert refusal in result.stderr


def test_a_zero_share_could_never_be_earned() -> None:
    result = _run(LOAD, {**PRODUCTION_ENV, "EARNED_APPROVAL_MAX_SHARE": "0"})
    assert result.returncode != 0
    assert "EARNED_APPROVAL_MAX_SHARE must lie above 0" in result.stderr
