"""End to end in a real headless Chromium: log in, triage with the keyboard, open a post,
decide, bulk-act with undo, see the audit entry. Screenshots land in screenshots/."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

from moderation.models import AuditLog, BulkAction, Decision, Post, PostStatus
from tests.dashboard.dashboard_factories import UserFactory
from tests.e2e.seed import seed_world

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

T = TypeVar("T")


def wait_for(condition: Callable[[], T | None], *, timeout: float = 10.0, what: str = "condition") -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def login(page, live_server, username: str, screenshot_dir=None) -> None:
    page.goto(f"{live_server.url}/dashboard/")
    assert "/accounts/login/" in page.url
    if screenshot_dir is not None:
        page.screenshot(path=str(screenshot_dir / "login.png"))
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("pw-for-tests-123")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/dashboard/")


def current_id(page) -> int:
    return int(page.locator("tr.qrow.is-current").get_attribute("data-post-id"))


def test_moderator_flow(page, live_server, screenshot_dir):
    world = seed_world()
    UserFactory(username="mia", role="moderator")
    login(page, live_server, "mia", screenshot_dir)

    rows = page.locator("tr.qrow")
    assert rows.count() == len(world["posts"])
    page.screenshot(path=str(screenshot_dir / "queue.png"), full_page=True)

    # j/k move the cursor
    first = current_id(page)
    page.keyboard.press("j")
    second = current_id(page)
    assert second != first
    page.keyboard.press("k")
    assert current_id(page) == first

    # ? opens the help overlay, Escape closes it
    page.keyboard.press("?")
    assert page.locator("#help").is_visible()
    page.keyboard.press("Escape")
    assert not page.locator("#help").is_visible()

    # s marks the current row spam without leaving the page
    page.keyboard.press("s")
    page.locator(f'tr.qrow[data-post-id="{first}"]').wait_for(state="detached")
    wait_for(lambda: Post.objects.get(pk=first).status == PostStatus.REMOVED, what="spam decision")
    assert current_id(page) == second

    # h approves
    page.keyboard.press("h")
    page.locator(f'tr.qrow[data-post-id="{second}"]').wait_for(state="detached")
    wait_for(lambda: Post.objects.get(pk=second).status == PostStatus.APPROVED, what="ham decision")

    # o opens the current post; reading it claims nothing, the Claim button does
    target = current_id(page)
    page.keyboard.press("o")
    page.wait_for_url(f"**/dashboard/posts/{target}/")
    assert page.get_by_role("heading", name="Why the model scored it").is_visible()
    page.screenshot(path=str(screenshot_dir / "detail.png"), full_page=True)
    assert Post.objects.get(pk=target).claimed_by is None
    page.locator("[data-claim]").click()
    page.wait_for_selector("[data-claimed-mine]")
    claimed_by = Post.objects.get(pk=target).claimed_by
    assert claimed_by is not None and claimed_by.username == "mia"

    # decide with the form: s picks spam and focuses the reason; Ctrl+Enter submits
    page.keyboard.press("s")
    page.get_by_label("Reason").select_option("commercial-spam")
    page.locator("#id_note").fill("watch spam ring")  # the decision's note, not a moderator note
    page.keyboard.press("Control+Enter")
    page.wait_for_selector(".flash-undo")
    decision = Decision.objects.get(post_id=target)
    assert (decision.label, decision.reason_code, decision.note) == ("spam", "commercial-spam", "watch spam ring")
    # On to the next post; the decided one is a click back in the message.
    assert f"/dashboard/posts/{target}/" not in page.url and "/dashboard/posts/" in page.url
    assert f"Post #{target} marked spam" in page.locator(".flash-undo").inner_text()

    # bulk: select two rows with x, mark spam, then undo
    page.goto(f"{live_server.url}/dashboard/")
    picked = []
    for _ in range(2):
        picked.append(current_id(page))
        page.keyboard.press("x")
        page.keyboard.press("j")
    assert page.locator("[data-selected-count]").inner_text() == "2"
    page.locator("#bulk-reason").select_option("scam")
    page.locator("#bulk-form").get_by_role("button", name="Mark spam").click()
    page.wait_for_selector(".flash-undo")
    bulk = BulkAction.objects.get()
    assert sorted(int(i) for i in bulk.previous_statuses) == sorted(picked)
    assert set(Post.objects.filter(pk__in=picked).values_list("status", flat=True)) == {PostStatus.REMOVED}
    page.screenshot(path=str(screenshot_dir / "queue-after-bulk.png"))
    page.locator(".flash-undo").get_by_role("button", name="Undo").click()
    page.wait_for_selector("text=undone")
    assert set(Post.objects.filter(pk__in=picked).values_list("status", flat=True)) == {PostStatus.QUEUED}

    # the audit log shows the undo
    page.get_by_role("link", name="Audit log").click()
    page.wait_for_url("**/dashboard/audit/")
    assert page.locator('tr[data-audit-action="bulk.undo"]').count() == 1
    assert page.locator('tr[data-audit-action="post.decide"]').count() == 3
    page.screenshot(path=str(screenshot_dir / "audit.png"))
    assert AuditLog.objects.filter(action="bulk.decide").count() == 1


def test_focus_mode_and_cluster(page, live_server, screenshot_dir):
    world = seed_world()
    UserFactory(username="finn", role="moderator")
    login(page, live_server, "finn")
    page.keyboard.press("f")
    page.wait_for_url("**/dashboard/posts/*/?focus=1")
    first_url = page.url
    page.keyboard.press("h")
    page.get_by_label("Reason").select_option("legitimate")
    page.get_by_role("button", name="Record decision").click()
    page.wait_for_url("**/?focus=1")
    assert page.url != first_url  # moved on to the next unclaimed item
    page.keyboard.press("?")
    page.screenshot(path=str(screenshot_dir / "focus-help.png"))
    page.keyboard.press("Escape")

    # cluster action on the spammer: preview count, confirm, undo
    spammer = world["spammer"]
    page.goto(f"{live_server.url}/dashboard/cluster/author/{spammer.pk}/")
    pending = Post.objects.filter(author=spammer, status__in=["queued", "received"]).count()
    assert page.locator("[data-preview-count]").inner_text() == str(pending)
    page.screenshot(path=str(screenshot_dir / "cluster.png"))
    page.get_by_label("Reason").select_option("scam")
    page.get_by_role("button", name=f"Apply to {pending} post").click()
    page.wait_for_selector(".flash-undo")
    assert Post.objects.filter(author=spammer, status="queued").count() == 0


def test_analyst_sees_metrics_not_queue(page, live_server, screenshot_dir):
    world = seed_world()
    mod = UserFactory(username="mo", role="moderator")
    from moderation.services.decisions import decision_record

    for post in world["posts"][:6]:
        assert post.final_score is not None
        decision_record(post=post, moderator=mod, label="spam" if post.final_score > 0.8 else "ham")
    UserFactory(username="ana", role="analyst")
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("ana")
    page.get_by_label("Password").fill("pw-for-tests-123")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/dashboard/metrics/")
    assert page.get_by_role("link", name="Queue").count() == 0
    page.wait_for_selector("[data-triton]")  # loaded by htmx; Triton is not running here
    assert page.locator('[data-moderator="mo"]').count() == 1
    page.screenshot(path=str(screenshot_dir / "metrics.png"), full_page=True)
    response = page.goto(f"{live_server.url}/dashboard/focus/")
    assert response.status == 403
