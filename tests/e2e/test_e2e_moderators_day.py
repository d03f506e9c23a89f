"""A moderator's day in a real headless Chromium: reasons on keyboard decisions, undo from the post
and the audit log, a stale form refused, the Reported view and sort, and every screen at 390 px."""

from __future__ import annotations

import pytest

from moderation.models import BulkAction, Decision, Post, PostStatus
from moderation.services.decisions import decision_record
from tests.dashboard.dashboard_factories import UserFactory
from tests.e2e.seed import seed_world
from tests.e2e.test_e2e_dashboard import current_id, login, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_reasons_undo_and_stale_forms(page, live_server, screenshot_dir):
    seed_world()
    mia = UserFactory(username="mia", role="moderator")
    login(page, live_server, "mia")

    # The s key records the reason chosen for it (kept in the browser across pages).
    page.locator("#key-reason-spam").select_option("phishing")
    page.reload()
    assert page.locator("#key-reason-spam").input_value() == "phishing"
    first = current_id(page)
    page.keyboard.press("s")
    page.locator(f'tr.qrow[data-post-id="{first}"]').wait_for(state="detached")
    decision = wait_for(lambda: Decision.objects.filter(post_id=first).first(), what="keyboard decision")
    assert decision.reason_code == "phishing"

    # The decided post is read-only: who decided and when, and an Undo button.
    page.goto(f"{live_server.url}/dashboard/posts/{first}/")
    assert "Already decided" in page.locator("[data-already-decided]").inner_text()
    assert not page.locator("[data-decision-form]").is_visible()  # inside the closed override panel
    page.screenshot(path=str(screenshot_dir / "detail-decided.png"), full_page=True)
    page.locator("[data-undo-decision]").click()
    page.wait_for_selector("text=undone")
    assert Post.objects.get(pk=first).status == PostStatus.QUEUED

    # A form rendered before someone else decided is refused, not recorded a second time.
    page.goto(f"{live_server.url}/dashboard/posts/{first}/")
    decision_record(
        post=Post.objects.get(pk=first), moderator=UserFactory(username="zed", role="moderator"), label="spam"
    )
    page.keyboard.press("h")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector(".flash-error")
    assert "Already decided: spam by zed" in page.locator(".flash-error").inner_text()
    assert Decision.objects.filter(post_id=first, undone_at__isnull=True).count() == 1

    # Bulk undo from the audit log, after the toast is gone.
    page.goto(f"{live_server.url}/dashboard/")
    picked = [current_id(page)]
    page.keyboard.press("x")
    page.locator("#bulk-form").get_by_role("button", name="Not spam").click()
    page.wait_for_selector(".flash-undo")
    bulk = BulkAction.objects.get()
    assert Decision.objects.get(bulk_action=bulk).reason_code == "legitimate"  # the h key's reason
    page.goto(f"{live_server.url}/dashboard/audit/")
    page.screenshot(path=str(screenshot_dir / "audit-diff.png"), full_page=True)
    page.locator('tr[data-audit-action="bulk.decide"] [data-audit-undo="bulk"]').click()
    page.wait_for_selector("text=undone")
    assert Post.objects.get(pk=picked[0]).status == PostStatus.QUEUED
    assert mia.pk == BulkAction.objects.get().moderator_id


def test_reported_view_sort_and_narrow_screens(browser, live_server, screenshot_dir):
    world = seed_world()
    mod = UserFactory(username="nia", role="moderator")
    decision_record(post=world["posts"][0], moderator=mod, label="spam")
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1)
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        login(page, live_server, "nia")
        page.get_by_role("link", name="Reported").click()
        page.wait_for_url("**/?view=reported")
        reasons = page.locator("[data-report-reasons]")
        assert reasons.count() >= 1
        reported = Post.objects.filter(report_count__gt=0).exclude(status__in=["removed", "approved"]).count()
        assert page.locator("tr.qrow").count() == reported

        pages = {
            "queue": "/dashboard/",
            "reported": "/dashboard/?view=reported",
            "queue-by-age": "/dashboard/?sort=age",
            "detail": f"/dashboard/posts/{world['posts'][3].pk}/",
            "decided": f"/dashboard/posts/{world['posts'][0].pk}/",
            "audit": "/dashboard/audit/",
            "metrics": "/dashboard/metrics/?window=48h",
        }
        for name, path in pages.items():
            page.goto(f"{live_server.url}{path}")
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, f"{name} is {width}px wide at a 390px viewport"
            page.screenshot(path=str(screenshot_dir / f"narrow-{name}.png"), full_page=True)

        # Filters as a panel; the decision panel above the post text on a narrow screen.
        page.goto(f"{live_server.url}/dashboard/")
        page.get_by_text("More filters").click()
        assert page.locator(".more-panel").is_visible()
        assert page.locator("tr.qrow .post-link").first.bounding_box()["width"] > 200  # text is not cut to a sliver
        page.goto(f"{live_server.url}{pages['detail']}")
        decide_y = page.locator("[data-decision-panel]").bounding_box()["y"]
        text_y = page.locator("#h-text").bounding_box()["y"]
        assert decide_y < text_y
    finally:
        context.close()
