"""Proportionate actions in a real headless Chromium: a moderator warns an author twice from the
author page, the source's ladder suspends them at the third strike, and the statement of
reasons of that suspension reaches the platform's webhook receiver, signed."""

from __future__ import annotations

import json

import pytest

from moderation.models import AuditLog, LadderRule, StatementOfReasons, Strike
from scoring.models import WebhookDelivery
from scoring.services.webhooks import SIGNATURE_HEADER, verify_signature, webhook_deliver
from tests.dashboard.dashboard_factories import AuthorFactory, PostFactory, SourceFactory, UserFactory
from tests.e2e.test_e2e_dashboard import login
from tests.scoring.webhook_receiver import start_receiver

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SECRET = "e2e-s3cret"


@pytest.fixture
def receiver():
    rec, server = start_receiver(18328)
    yield rec
    server.shutdown()
    server.server_close()


def _warn(page, live_server, author, *, reason: str, note: str) -> None:
    page.goto(f"{live_server.url}/dashboard/authors/{author.pk}/")
    page.locator('[data-enforce="warn"]').click()
    page.wait_for_selector("[data-enforce-form]")
    page.locator("#id_reason_code").select_option(reason)
    page.locator("#id_note").fill(note)
    page.get_by_role("button", name=f"Warn @{author}").click()
    page.wait_for_url(f"**/dashboard/authors/{author.pk}/")


def test_two_warnings_then_the_ladder_suspends_and_the_statement_reaches_the_platform(
    page, live_server, receiver, screenshot_dir
):
    source = SourceFactory(name="Chirp", slug="chirp", callback_url=receiver.url, webhook_secret=SECRET)
    LadderRule.objects.create(
        source=source, category="spam", strikes=3, window_days=30, action="suspend", duration_days=7
    )
    author = AuthorFactory(source=source, external_id="u-42", username="promo42")
    PostFactory(source=source, author=author, text="Cheap followers, best price")
    UserFactory(username="mia", role="moderator")
    login(page, live_server, "mia")

    _warn(page, live_server, author, reason="commercial-spam", note="ads in replies")
    _warn(page, live_server, author, reason="repetitive", note="the same ad again")
    assert page.locator("[data-author-suspended]").count() == 0
    assert page.locator("[data-live-strikes]").text_content() == "Spam: 2"

    _warn(page, live_server, author, reason="commercial-spam", note="third time")
    assert page.locator("[data-author-suspended]").is_visible()
    assert "suspension" in page.locator("[data-statements]").inner_text()
    page.screenshot(path=str(screenshot_dir / "author-ladder-suspended.png"), full_page=True)

    author.refresh_from_db()
    assert author.suspended_at is not None and author.suspended_until is not None
    assert Strike.objects.filter(author=author, issued_by__username="mia").count() == 3
    assert AuditLog.objects.filter(action="ladder.applied", target_id=str(author.pk)).count() == 1
    statement = StatementOfReasons.objects.get(author=author, action="suspension")

    # What the deliver_webhook task does for each row (no Celery worker in the browser tests).
    pending = WebhookDelivery.objects.filter(source=source, status=WebhookDelivery.Status.PENDING).order_by("pk")
    for delivery in pending:
        webhook_deliver(delivery_id=delivery.pk)
    received = receiver.wait_for(pending.count() or 1)
    events = [json.loads(r.body) for r in received]
    for r in received:
        assert verify_signature(secret=SECRET, header=r.headers[SIGNATURE_HEADER], body=r.body)
    assert [e["data"]["action"] for e in events if e["type"] == "enforcement"] == ["warn", "warn", "warn", "suspend"]
    (sor,) = [e["data"]["statement"] for e in events if e["type"] == "statement_of_reasons"]
    assert sor["id"] == statement.pk and sor["author_external_id"] == "u-42"
    assert sor["dsa"]["decision_account"] == "DECISION_ACCOUNT_SUSPENDED"
    assert sor["dsa"]["automated_decision"] == "AUTOMATED_DECISION_PARTIALLY"
    assert sor["dsa"]["category"] == "STATEMENT_CATEGORY_SCOPE_OF_PLATFORM_SERVICE"
    assert sor["dsa"]["end_date_account_restriction"] == author.suspended_until.date().isoformat()
