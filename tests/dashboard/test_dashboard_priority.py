"""Queue priority: score, weighted reports, the reporters' track record and time waited against
the SLA, stored on the post and kept in step by reports, scores and decisions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from dashboard.selectors.queue import QueueFilters, queue_page
from moderation.models import Post, PostStatus, ReporterRecord
from moderation.services.decisions import decision_record
from moderation.services.priority import (
    effective_priority,
    posts_report_weight_refresh,
    reporter_trust,
    severity,
)
from moderation.services.reports import report_create
from tests.dashboard.dashboard_factories import PostFactory, ReportFactory, SourceFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403
from tests.dashboard.dashboard_fixtures import client_for

pytestmark = pytest.mark.django_db


def _prioritised(**kwargs: object) -> Post:
    post = PostFactory(**kwargs)
    posts_report_weight_refresh(post_ids=[post.pk])
    post.refresh_from_db()
    return post


def test_reporter_trust_and_severity(settings):
    assert reporter_trust(upheld=0, rejected=0) == 1.0
    assert reporter_trust(upheld=8, rejected=0) == pytest.approx(1.8)
    assert reporter_trust(upheld=0, rejected=8) == pytest.approx(0.2)
    assert severity("Harassment") == 1.0 and severity("something else") == 0.5
    settings.DASHBOARD_REPORT_SEVERITY = {"harassment": 2.5}
    assert severity("harassment") == 2.5


def test_reports_raise_priority_above_an_unreported_high_score():
    now = timezone.now()
    high = _prioritised(final_score=0.85, received_at=now)
    harassed = PostFactory(final_score=0.0, received_at=now)
    for reporter in ("a", "b"):
        report_create(
            source=harassed.source, post_external_id=harassed.external_id, reporter_id=reporter, reason="harassment"
        )
    harassed.refresh_from_db()
    assert harassed.report_weight == pytest.approx(2.0)
    assert effective_priority(stored=harassed.priority, now=now) == pytest.approx(2.0, abs=1e-3)
    page = queue_page(filters=QueueFilters())
    ids = [r.post.pk for r in page.rows]
    assert ids.index(harassed.pk) < ids.index(high.pk)
    row = page.rows[ids.index(harassed.pk)]
    assert row.report_reasons == [("harassment", 2)]


def test_age_against_the_sla_raises_priority(settings):
    settings.DASHBOARD_SLA_SECONDS = 3600
    now = timezone.now()
    fresh = _prioritised(final_score=0.7, received_at=now)
    waiting = _prioritised(final_score=0.5, received_at=now - timedelta(hours=1))  # 0.5 + 1 SLA
    assert effective_priority(stored=waiting.priority, now=now) == pytest.approx(1.5, abs=1e-3)
    rows = queue_page(filters=QueueFilters()).rows
    assert [r.post.pk for r in rows] == [waiting.pk, fresh.pk]
    assert rows[0].sla_breached and not rows[1].sla_breached


def test_upheld_reports_make_a_reporter_weigh_more(moderator):
    source = SourceFactory()
    for _ in range(3):
        post = PostFactory(source=source, author__source=source)
        ReportFactory(post=post, reporter_id="good-eye", reason="spam")
        ReportFactory(post=post, reporter_id="cries-wolf", reason="spam")
        decision_record(post=post, moderator=moderator, label="spam")
        ham = PostFactory(source=source, author__source=source)
        ReportFactory(post=ham, reporter_id="cries-wolf", reason="spam")
        decision_record(post=ham, moderator=moderator, label="ham")
    good = ReporterRecord.objects.get(reporter_id="good-eye")
    wolf = ReporterRecord.objects.get(reporter_id="cries-wolf")
    assert (good.upheld, good.rejected) == (3, 0)
    assert (wolf.upheld, wolf.rejected) == (3, 3)
    a = PostFactory(source=source, author__source=source, final_score=0.3)
    b = PostFactory(source=source, author__source=source, final_score=0.3)
    report_create(source=a.source, post_external_id=a.external_id, reporter_id="good-eye", reason="spam")
    report_create(source=b.source, post_external_id=b.external_id, reporter_id="cries-wolf", reason="spam")
    a.refresh_from_db()
    b.refresh_from_db()
    assert a.report_weight == pytest.approx(0.5 * 1.6)
    html = client_for(moderator).get(reverse("dashboard:post_detail", args=[a.pk])).content.decode()
    assert "3 upheld · 0 rejected" in html
    assert b.report_weight == pytest.approx(0.5 * 1.0)
    assert a.priority > b.priority


def test_sort_choice_and_priority_keyset_pagination(mod_client):
    now = timezone.now()
    posts = [
        _prioritised(final_score=s, received_at=now - timedelta(minutes=m))
        for s, m in ((0.3, 50), (0.9, 1), (0.6, 20), (0.6, 21), (0.1, 200))
    ]
    by_priority = sorted(posts, key=lambda p: (-p.priority, p.pk))
    seen: list[int] = []
    cursor = None
    while True:
        page = queue_page(filters=QueueFilters(), cursor=cursor, page_size=2)
        seen += [r.post.pk for r in page.rows]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [p.pk for p in by_priority]
    age = [r.post.pk for r in queue_page(filters=QueueFilters(sort="age")).rows]
    assert age == [p.pk for p in sorted(posts, key=lambda p: p.received_at)]
    html = mod_client.get(reverse("dashboard:queue"), {"sort": "age"}).content.decode()
    assert html.index(f'data-post-id="{posts[4].pk}"') < html.index(f'data-post-id="{posts[1].pk}"')
    assert "oldest first" in html
    # A cursor made for another sort is ignored: the first page is shown.
    first = queue_page(filters=QueueFilters(), page_size=2)
    other = queue_page(filters=QueueFilters(sort="age"), cursor=first.next_cursor, page_size=2)
    assert other.rows[0].post.pk == sorted(posts, key=lambda p: p.received_at)[0].pk


def test_reported_view_lists_undecided_reported_posts_heaviest_first(mod_client, moderator):
    light = PostFactory(status=PostStatus.AUTO_APPROVED, final_score=0.01)
    heavy = PostFactory()
    decided = PostFactory()
    PostFactory()  # no reports
    report_create(source=light.source, post_external_id=light.external_id, reporter_id="r", reason="spam")
    for reporter in ("r1", "r2"):
        report_create(source=heavy.source, post_external_id=heavy.external_id, reporter_id=reporter, reason="violence")
    report_create(source=decided.source, post_external_id=decided.external_id, reporter_id="r", reason="spam")
    decision_record(post=decided, moderator=moderator, label="ham")
    html = mod_client.get(reverse("dashboard:queue"), {"view": "reported"}).content.decode()
    assert "Reported posts" in html
    assert html.index(f'data-post-id="{heavy.pk}"') < html.index(f'data-post-id="{light.pk}"')
    assert f'data-post-id="{decided.pk}"' not in html
    assert html.count('class="qrow') == 2
    assert "violence ×2" in html


def test_queue_rows_show_reasons_and_sla(mod_client, settings):
    settings.DASHBOARD_SLA_SECONDS = 3600
    late = _prioritised(received_at=timezone.now() - timedelta(hours=2))
    ReportFactory(post=late, reason="phishing")
    Post.objects.filter(pk=late.pk).update(report_count=1)
    html = mod_client.get(reverse("dashboard:queue")).content.decode()
    assert "is-breached" in html and "overdue 1.0h" in html
    assert '<span class="badge badge-report">phishing</span>' in html


def test_undo_restores_priority_and_refresh_command(moderator, settings):
    post = PostFactory(final_score=0.4)
    report_create(source=post.source, post_external_id=post.external_id, reporter_id="x", reason="harassment")
    post.refresh_from_db()
    before = post.priority
    from moderation.services.decisions import decision_undo

    decision = decision_record(post=post, moderator=moderator, label="ham")
    decision_undo(decision=decision, moderator=moderator)
    post.refresh_from_db()
    assert post.status == PostStatus.QUEUED and post.priority == pytest.approx(before)
    settings.DASHBOARD_SLA_SECONDS = 60
    call_command("queue_priority_refresh")
    post.refresh_from_db()
    assert effective_priority(stored=post.priority) == pytest.approx(
        0.4 + 1.0 + (timezone.now() - post.received_at).total_seconds() / 60, abs=0.05
    )


def test_scoring_writes_the_queued_posts_priority():
    from scoring.services.scoring import score_posts
    from tests.scoring.pipeline_support import FakeClient, make_post

    maybe, ham = make_post(text="maybe"), make_post(text="hi")
    score_posts(post_ids=[maybe.id, ham.id], client=FakeClient())
    maybe.refresh_from_db()
    ham.refresh_from_db()
    assert maybe.status == PostStatus.QUEUED
    assert maybe.final_score is not None
    assert effective_priority(stored=maybe.priority) == pytest.approx(
        maybe.final_score + (timezone.now() - maybe.received_at).total_seconds() / 14400, abs=1e-3
    )
    assert ham.priority == 0.0  # auto-approved: not in the queue, not prioritised
