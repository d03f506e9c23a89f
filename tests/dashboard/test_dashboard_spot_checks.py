"""The Spot checks tab and its figures: drawn automatic decisions wait there oldest first until a
moderator decides them, and the metrics page turns those decisions into per-source error
shares (their interval: tests/moderation/test_spot_check_figures.py)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from moderation.models import Post, PostStatus
from moderation.selectors.spot_checks import spot_check_figures
from scoring.models import Action
from tests.dashboard.dashboard_factories import AuthorFactory, PostFactory, ScoreFactory, SourceFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403
from tests.dashboard.dashboard_fixtures import client_for

pytestmark = pytest.mark.django_db

ROW = re.compile(r'<tr class="qrow[^"]*" data-post-id="(\d+)"')


def _auto(status: str, *, drawn: bool = True, ago_h: float = 1.0, source=None, text: str = "a post"):
    """A post the models approved or removed on their own, drawn for a check or not."""
    source = source or SourceFactory()
    action = Action.APPROVE if status == PostStatus.AUTO_APPROVED else Action.REMOVE
    received = timezone.now() - timedelta(hours=ago_h)
    post = PostFactory(
        status=status,
        source=source,
        author=AuthorFactory(source=source),
        text=text,
        final_score=0.1,
        received_at=received,
        spot_check_action=action if drawn else "",
    )
    ScoreFactory(post=post, action=action, created_at=received)
    return post


def _rows(client, **query: str) -> list[int]:
    response = client.get(reverse("dashboard:spot_checks"), query)
    assert response.status_code == 200
    return [int(pk) for pk in ROW.findall(response.content.decode())]


def test_drawn_automatic_decisions_wait_oldest_first(mod_client) -> None:
    newer = _auto(PostStatus.AUTO_APPROVED, ago_h=1)
    older = _auto(PostStatus.AUTO_REMOVED, ago_h=5)
    _auto(PostStatus.AUTO_APPROVED, drawn=False)
    requeued = _auto(PostStatus.AUTO_APPROVED)
    Post.objects.filter(pk=requeued.pk).update(status=PostStatus.QUEUED)  # a report's re-score: the queue has it
    rescored = _auto(PostStatus.AUTO_APPROVED)
    Post.objects.filter(pk=rescored.pk).update(status=PostStatus.AUTO_REMOVED)  # the re-score's removal, not the draw's
    assert _rows(mod_client) == [older.pk, newer.pk]
    html = mod_client.get(reverse("dashboard:spot_checks")).content.decode()
    assert 'data-spot-check="approved"' in html and 'data-spot-check="removed"' in html
    assert 'data-tab-count="spot_checks">2<' in html


def test_a_moderators_decision_takes_it_off_the_tab_and_into_the_figures(mod_client) -> None:
    source = SourceFactory(name="Forum")
    missed = _auto(PostStatus.AUTO_APPROVED, source=source)
    fine = _auto(PostStatus.AUTO_APPROVED, source=source)
    wrongly_removed = _auto(PostStatus.AUTO_REMOVED, source=source)
    waiting = _auto(PostStatus.AUTO_APPROVED, source=source)
    for post, label in ((missed, "spam"), (fine, "ham"), (wrongly_removed, "ham")):
        response = mod_client.post(
            reverse("dashboard:decide", args=[post.pk]), {"label": label, "quick": "1"}, HTTP_ACCEPT="application/json"
        )
        assert response.status_code == 200, response.content
    assert _rows(mod_client) == [waiting.pk]
    (figures,) = spot_check_figures(since=timezone.now() - timedelta(days=1))
    assert figures.source == "Forum"
    assert (figures.approve.checked, figures.approve.wrong, figures.approve.waiting) == (2, 1, 1)
    assert (figures.remove.checked, figures.remove.wrong, figures.remove.waiting) == (1, 1, 0)
    assert figures.approve.share == 0.5
    assert figures.approve.coverage == 2 / 3 and figures.approve.possible == (1 / 3, 2 / 3)
    assert figures.remove.coverage == 1.0
    page = mod_client.get(reverse("dashboard:metrics"), {"window": "7"}).content.decode()
    assert 'data-spot-source="Forum"' in page
    assert "1 of 2 · 50.0%" in page  # one violation of two approvals checked
    assert "provisional: 67% of the draws labelled; ends between 33.3% and 66.7%" in page
    assert page.count("data-spot-provisional") == 1  # the removals are all labelled


def test_the_source_filter_keeps_other_sources_rows_out_and_the_window_holds(mod_client) -> None:
    mine, theirs = SourceFactory(slug="tenant-a", name="A"), SourceFactory(slug="tenant-b", name="B")
    kept = _auto(PostStatus.AUTO_APPROVED, source=mine)
    _auto(PostStatus.AUTO_APPROVED, source=theirs, text="tenant-b secret words")
    response = mod_client.get(reverse("dashboard:spot_checks"), {"source": "tenant-a"})
    assert [int(pk) for pk in ROW.findall(response.content.decode())] == [kept.pk]
    assert "tenant-b secret words" not in response.content.decode()
    old = _auto(PostStatus.AUTO_APPROVED, source=mine, ago_h=24 * 40)
    assert old.pk in _rows(mod_client)  # still waiting, however old
    figures = {f.source: f for f in spot_check_figures(since=timezone.now() - timedelta(days=30))}
    assert figures["A"].approve.waiting == 1  # the 40-day-old draw is outside the window
    assert figures["B"].approve.waiting == 1


def test_the_tab_costs_the_same_queries_for_3_or_30_drawn_posts(mod_client) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert mod_client.get(reverse("dashboard:spot_checks")).status_code == 200
        return len(ctx.captured_queries)

    for _ in range(3):
        _auto(PostStatus.AUTO_APPROVED)
    few = count()
    for _ in range(27):
        _auto(PostStatus.AUTO_REMOVED)
    assert count() == few


def test_nothing_drawn_says_so_on_the_metrics_page(mod_client) -> None:
    assert 'data-metric="spot-none"' in mod_client.get(reverse("dashboard:metrics")).content.decode()
    assert "Nothing to check." in mod_client.get(reverse("dashboard:spot_checks")).content.decode()


def test_only_moderators_see_the_tab(analyst) -> None:
    assert client_for(analyst).get(reverse("dashboard:spot_checks")).status_code == 403
