"""The Spot checks tab in a real headless Chromium: reached from the queue's tabs, the drawn
automatic decisions oldest first, each decided with the queue's keys, and the metrics page's
figure that the decisions make."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from moderation.models import Post, PostStatus, Source
from scoring.models import Action
from tests.dashboard.dashboard_factories import AuthorFactory, PostFactory, ScoreFactory, SourceFactory, UserFactory
from tests.e2e.test_e2e_dashboard import current_id, login, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def _drawn(status: str, hours_ago: float, source: Source) -> Post:
    score = 0.05 if status == PostStatus.AUTO_APPROVED else 0.97
    action = Action.APPROVE if status == PostStatus.AUTO_APPROVED else Action.REMOVE
    received = timezone.now() - timedelta(hours=hours_ago)
    post = PostFactory(
        status=status,
        final_score=score,
        source=source,
        author=AuthorFactory(source=source),
        received_at=received,
        spot_check_action=action,
    )
    ScoreFactory(post=post, action=action, created_at=received)
    return post


def test_spot_checks_are_decided_with_the_queues_keys(page, live_server, screenshot_dir):
    source = SourceFactory(name="Forum")
    approved = _drawn(PostStatus.AUTO_APPROVED, hours_ago=3, source=source)
    removed = _drawn(PostStatus.AUTO_REMOVED, hours_ago=1, source=source)
    UserFactory(username="sam", role="moderator")
    login(page, live_server, "sam")

    page.locator("[data-view-spot-checks]").click()
    page.wait_for_url("**/dashboard/spot-checks/")
    rows = page.locator("tr.qrow")
    assert [int(rows.nth(i).get_attribute("data-post-id")) for i in range(rows.count())] == [approved.pk, removed.pk]
    assert page.locator(f'tr.qrow[data-post-id="{approved.pk}"] [data-spot-check="approved"]').is_visible()
    assert page.locator(f'tr.qrow[data-post-id="{removed.pk}"] [data-spot-check="removed"]').is_visible()
    page.screenshot(path=str(screenshot_dir / "spot-checks.png"), full_page=True)

    # s: the approved post broke the rules; h: the removed post was fine.
    assert current_id(page) == approved.pk
    page.keyboard.press("s")
    wait_for(lambda: Post.objects.get(pk=approved.pk).status == PostStatus.REMOVED, what="violation found")
    page.locator(f'tr.qrow[data-post-id="{approved.pk}"]').wait_for(state="detached")
    assert current_id(page) == removed.pk
    page.keyboard.press("h")
    wait_for(lambda: Post.objects.get(pk=removed.pk).status == PostStatus.APPROVED, what="removal overturned")
    # The last row gone, the page fetches what is left (nothing): let it finish first.
    page.locator(f'tr.qrow[data-post-id="{removed.pk}"]').wait_for(state="detached")
    page.wait_for_load_state("networkidle")

    page.goto(f"{live_server.url}/dashboard/metrics/?window=7")
    row = page.locator('[data-spot-check-figures] tr[data-spot-source="Forum"]')
    assert row.count() == 1
    assert "1 of 1 · 100.0%" in row.locator('[data-metric="spot-missed"]').inner_text()
    assert "1 of 1 · 100.0%" in row.locator('[data-metric="spot-wrongly-removed"]').inner_text()
