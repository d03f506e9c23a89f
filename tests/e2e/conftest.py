"""Browser fixtures: a real headless Chromium (Debian package) driven by Playwright.

Never `playwright install`: the browser is /usr/bin/chromium from apt."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Playwright's sync API keeps an event loop running in the test thread; the ORM calls the
# tests make between browser steps are still synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "screenshots"


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} missing: apt-get install -y chromium chromium-driver")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(10_000)
    try:
        yield pg
    finally:
        context.close()


@pytest.fixture
def screenshot_dir() -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    return SCREENSHOTS


@pytest.fixture(autouse=True)
def dashboard_defaults(transactional_db: None) -> None:
    """Transactional tests flush the database between tests, data migrations included:
    put the roles and reason codes back."""
    import importlib

    from django.apps import apps

    migration = importlib.import_module("moderation.migrations.0002_dashboard_roles_and_reason_codes")
    migration.forwards(apps, None)
