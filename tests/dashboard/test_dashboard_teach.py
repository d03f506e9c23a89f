"""The Teach tab: its order on real rows, one campaign per page, the source filter, a fixed
query count, and the normal queue's own order left as it was."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from moderation.models import PostStatus
from moderation.services.campaigns import campaigns_members_add
from tests.dashboard.dashboard_factories import AuthorFactory, PostFactory, ScoreFactory, SourceFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403

pytestmark = pytest.mark.django_db

ROW = re.compile(r'<tr class="qrow[^"]*" data-post-id="(\d+)"')


def _post(score: float, *, unfamiliarity: float | None = None, **kwargs: object):
    kwargs.setdefault("status", PostStatus.QUEUED)
    post = PostFactory(final_score=score, **kwargs)
    features = {"unfamiliarity": unfamiliarity} if unfamiliarity is not None else {}
    routing = f"unfamiliar text ({unfamiliarity:.1f} x the limit)" if (unfamiliarity or 0) >= 1 else ""
    ScoreFactory(post=post, features=features, routing_reason=routing)
    return post


def _order(html: str) -> list[int]:
    return [int(pk) for pk in ROW.findall(html)]


def test_the_teach_tab_puts_unfamiliar_and_uncertain_before_confident(mod_client) -> None:
    confident = _post(0.95)
    torn = _post(0.6)
    unfamiliar = _post(0.25, unfamiliarity=2.5)
    response = mod_client.get(reverse("dashboard:teach"))
    assert response.status_code == 200
    html = response.content.decode()
    assert _order(html) == [unfamiliar.pk, torn.pk, confident.pk]
    assert 'data-teach-reason="new kind"' in html and 'data-teach-reason="uncertain"' in html
    # Every row carries the queue's keyboard decision URL.
    assert html.count("data-decide-url=") == 3


def test_one_campaign_takes_one_place_near_the_top(mod_client) -> None:
    first = _post(0.6)
    copies = [first] + [_post(0.6, author=AuthorFactory(source=first.source), text=first.text) for _ in range(5)]
    campaigns_members_add(source_id=first.source_id, groups=[(None, [p.pk for p in copies])], now=first.received_at)
    lone = [_post(0.4 + 0.02 * i, author=AuthorFactory(source=first.source)) for i in range(4)]
    order = _order(mod_client.get(reverse("dashboard:teach")).content.decode())
    members = {p.pk for p in copies}
    assert len(order) == 10
    assert sum(1 for pk in order[:5] if pk in members) == 1
    assert set(order[1:5]) == {p.pk for p in lone}


def test_the_source_filter_keeps_another_sources_posts_out(mod_client) -> None:
    mine, theirs = SourceFactory(slug="tenant-a"), SourceFactory(slug="tenant-b")
    kept = _post(0.6, author=AuthorFactory(source=mine), source=mine, text="tenant-a words")
    _post(0.6, author=AuthorFactory(source=theirs), source=theirs, text="tenant-b secret words")
    html = mod_client.get(reverse("dashboard:teach"), {"source": "tenant-a"}).content.decode()
    assert _order(html) == [kept.pk]
    assert "tenant-b secret words" not in html


def test_decided_posts_leave_the_teach_tab(mod_client) -> None:
    waiting = _post(0.6)
    _post(0.6, status=PostStatus.APPROVED)
    _post(0.6, status=PostStatus.AUTO_REMOVED)
    assert _order(mod_client.get(reverse("dashboard:teach")).content.decode()) == [waiting.pk]


def test_the_teach_tab_costs_the_same_queries_for_3_or_30_posts(mod_client) -> None:
    def count() -> int:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as ctx:
            assert mod_client.get(reverse("dashboard:teach")).status_code == 200
        return len(ctx.captured_queries)

    for _ in range(3):
        _post(0.5, unfamiliarity=1.2)
    few = count()
    for _ in range(27):
        _post(0.5, unfamiliarity=1.2)
    assert count() == few


def test_the_normal_queue_keeps_reported_and_urgent_posts_first(mod_client) -> None:
    torn = _post(0.6, unfamiliarity=2.0)
    reported = _post(0.95, report_count=3, priority=4.0)
    teach = _order(mod_client.get(reverse("dashboard:teach")).content.decode())
    queue = _order(mod_client.get(reverse("dashboard:queue")).content.decode())
    assert teach == [torn.pk, reported.pk]
    assert queue[0] == reported.pk


def test_an_unfamiliar_post_far_from_the_boundary_still_enters_a_full_pool() -> None:
    from dashboard.selectors.queue import QueueFilters
    from dashboard.selectors.teach import teach_ranking

    near = [_post(0.6) for _ in range(3)]
    far = _post(0.02, unfamiliarity=2.2)
    picks = teach_ranking(filters=QueueFilters(), pool=2)  # room for two of the near ones only
    ids = [pick.item.post_id for pick in picks]
    assert ids[0] == far.pk
    assert len(ids) == 3 and set(ids[1:]) < {p.pk for p in near}
