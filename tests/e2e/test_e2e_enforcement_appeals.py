"""Enforcement, appeals and the author page in a real headless Chromium: the enforcement form
(reason code, note, expiry) instead of a browser confirm, the appeals queue and review, the
author page with linked accounts, and the new pages at 390 px without horizontal overflow."""

from __future__ import annotations

import pytest

from moderation.models import Appeal, AppealStatus, AuditLog, Author, PostStatus
from moderation.services.appeals import appeal_submit
from moderation.services.decisions import decision_record
from tests.dashboard.dashboard_factories import UserFactory
from tests.e2e.seed import seed_world
from tests.e2e.test_e2e_dashboard import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_enforcement_form_author_page_and_appeals(page, live_server, screenshot_dir):
    world = seed_world()
    spammer = Author.objects.get(external_id="u-991")
    mia = UserFactory(username="mia", role="moderator")
    UserFactory(username="zed", role="moderator")
    login(page, live_server, "mia")
    dialogs: list[str] = []

    def on_dialog(dialog):
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)

    # From a post, "Suspend author" opens a real form: no confirm() dialog, a reason is required.
    post = next(p for p in world["posts"] if p.author_id == spammer.pk)
    page.goto(f"{live_server.url}/dashboard/posts/{post.pk}/")
    page.locator('[data-enforce="suspend"]').click()
    page.wait_for_selector("[data-enforce-form]")
    page.get_by_role("button", name=f"Suspend @{spammer}").click()
    assert page.locator("#id_reason_code:invalid").count() == 1  # the browser refuses an empty reason
    page.locator("#id_reason_code").select_option("bot-activity")
    page.locator("#id_note").fill("forty posts in a minute")
    page.locator("#id_expires_at").fill("2999-01-01T09:30")
    page.get_by_role("button", name=f"Suspend @{spammer}").click()
    page.wait_for_url(f"**/dashboard/posts/{post.pk}/")
    assert dialogs == []
    spammer.refresh_from_db()
    assert spammer.suspended_at is not None and spammer.suspended_reason_code == "bot-activity"
    assert spammer.suspended_until is not None
    assert spammer.suspended_reason == "forty posts in a minute" and spammer.suspended_until.year == 2999
    assert AuditLog.objects.filter(action="author.suspend", actor__username="mia").exists()

    # The author page: posts, enforcement history, linked accounts (the spammer shares an IP).
    page.goto(f"{live_server.url}/dashboard/authors/{spammer.pk}/")
    assert page.locator("[data-author-suspended]").is_visible()
    assert "author.suspend" in page.locator("[data-enforcement-history]").inner_text()
    page.screenshot(path=str(screenshot_dir / "author-page.png"), full_page=True)

    # An appeal against mia's decision: mia cannot review it, zed overturns it.
    decided = world["posts"][1]
    decision_record(post=decided, moderator=mia, label="spam")
    appeal, _ = appeal_submit(source=decided.source, post_external_id=decided.external_id, statement="It is my bakery")
    page.goto(f"{live_server.url}/dashboard/appeals/")
    page.locator(f'[data-appeal="{appeal.pk}"] a').first.click()
    assert page.locator("[data-own-decision]").is_visible() and page.locator("[data-appeal-form]").count() == 0
    page.screenshot(path=str(screenshot_dir / "appeal-own-decision.png"), full_page=True)
    page.context.clear_cookies()  # sign in as another moderator
    login(page, live_server, "zed")
    page.goto(f"{live_server.url}/dashboard/appeals/{appeal.pk}/")
    assert "It is my bakery" in page.locator("[data-appeal-statement]").inner_text()
    assert "mia" in page.locator("[data-appeal-decider]").inner_text()
    page.locator('input[name="outcome"][value="overturn"]').check()
    page.locator("#id_reason_code").select_option("legitimate")
    page.get_by_role("button", name="Record the review").click()
    page.wait_for_url("**/dashboard/appeals/")
    appeal.refresh_from_db()
    decided.refresh_from_db()
    assert appeal.status == AppealStatus.OVERTURNED and decided.status == PostStatus.APPROVED
    page.goto(f"{live_server.url}/dashboard/appeals/?status=overturned")
    assert page.locator(f'[data-appeal="{appeal.pk}"]').is_visible()
    assert "100" in page.locator('[data-figures-for="mia"]').inner_text()  # mia's overturn rate
    assert Appeal.objects.count() == 1


def test_new_pages_fit_a_390px_screen(browser, live_server, screenshot_dir):
    world = seed_world()
    UserFactory(username="nia", role="moderator")
    spammer = Author.objects.get(external_id="u-991")
    decided = world["posts"][2]
    decision_record(post=decided, moderator=UserFactory(username="other", role="moderator"), label="spam")
    appeal, _ = appeal_submit(
        source=decided.source, post_external_id=decided.external_id, statement="averyveryverylongwordwithoutspaces" * 8
    )
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1)
    page = context.new_page()
    page.set_default_timeout(10_000)
    link = world["posts"][0].link
    assert link is not None
    try:
        login(page, live_server, "nia")
        pages = {
            "enforce-suspend": f"/dashboard/enforce/author/{spammer.pk}/suspend/",
            "enforce-block": f"/dashboard/enforce/domain/{link.domain_id}/block/",
            "author": f"/dashboard/authors/{spammer.pk}/",
            "appeals": "/dashboard/appeals/",
            "appeal": f"/dashboard/appeals/{appeal.pk}/",
            "enforce-warn": f"/dashboard/enforce/author/{spammer.pk}/warn/",
            "transparency": "/dashboard/transparency/",
        }
        for name, path in pages.items():
            response = page.goto(f"{live_server.url}{path}")
            assert response.status == 200, name
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, f"{name} is {width}px wide at a 390px viewport"
            page.screenshot(path=str(screenshot_dir / f"narrow-{name}.png"), full_page=True)
    finally:
        context.close()
