"""The Teach tab in a real headless Chromium: reached from the queue's tabs, rows in teach
order with their reasons, and decided with the queue's keys."""

from __future__ import annotations

import pytest

from moderation.models import Post, PostStatus
from tests.dashboard.dashboard_factories import PostFactory, ScoreFactory, UserFactory
from tests.e2e.test_e2e_dashboard import current_id, login, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def _queued(score: float, unfamiliarity: float | None = None) -> Post:
    post = PostFactory(status=PostStatus.QUEUED, final_score=score)
    ScoreFactory(post=post, features={"unfamiliarity": unfamiliarity} if unfamiliarity is not None else {})
    return post


def test_teach_tab_order_reasons_and_keys(page, live_server, screenshot_dir):
    confident = _queued(0.97)
    torn = _queued(0.6)
    unfamiliar = _queued(0.1, unfamiliarity=2.4)
    UserFactory(username="tia", role="moderator")
    login(page, live_server, "tia")

    page.locator("[data-view-teach]").click()
    page.wait_for_url("**/dashboard/teach/")
    rows = page.locator("tr.qrow")
    assert [int(rows.nth(i).get_attribute("data-post-id")) for i in range(rows.count())] == [
        unfamiliar.pk,
        torn.pk,
        confident.pk,
    ]
    first = page.locator(f'tr.qrow[data-post-id="{unfamiliar.pk}"]')
    assert first.locator('[data-teach-reason="new kind"]').is_visible()
    assert page.locator(f'tr.qrow[data-post-id="{torn.pk}"] [data-teach-reason="uncertain"]').is_visible()
    page.screenshot(path=str(screenshot_dir / "teach.png"), full_page=True)

    # s removes the current (top) row as a violation, h approves the next: the queue's keys.
    assert current_id(page) == unfamiliar.pk
    page.keyboard.press("s")
    first.wait_for(state="detached")
    wait_for(lambda: Post.objects.get(pk=unfamiliar.pk).status == PostStatus.REMOVED, what="spam decision")
    assert current_id(page) == torn.pk
    page.keyboard.press("h")
    wait_for(lambda: Post.objects.get(pk=torn.pk).status == PostStatus.APPROVED, what="ham decision")
