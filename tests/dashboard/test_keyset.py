"""Keyset cursors (dashboard.selectors.keyset) as the queue and the audit log use them: every row
once across pages, ties broken by id, NULL scores first, and a foreign cursor means page one."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import pytest

from dashboard.selectors import audit
from dashboard.selectors.keyset import Cursor
from dashboard.selectors.queue import CURSOR_TYPES, QueueFilters, queue_page
from moderation.models import AuditLog
from tests.dashboard.dashboard_factories import PostFactory

WHEN = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def test_cursor_round_trip_and_rejections():
    order = ("-final_score", "-report_count", "received_at", "id")
    cursor = Cursor(order, (None, 3, WHEN, 42))
    assert Cursor.decode(cursor.encode(), order=order, types=CURSOR_TYPES) == cursor
    assert Cursor.decode(cursor.encode(), order=("received_at", "id"), types=CURSOR_TYPES) is None
    for junk in ("", "not-a-cursor", "%C0%AF", base64.urlsafe_b64encode(b'["-final_score", 1]').decode()):
        assert Cursor.decode(junk, order=order, types=CURSOR_TYPES) is None
    bad_date = base64.urlsafe_b64encode(b'["received_at,id", "yesterday", 1]').decode()
    assert Cursor.decode(bad_date, order=("received_at", "id"), types=CURSOR_TYPES) is None


@pytest.mark.django_db
def test_audit_pages_cover_every_entry_once_with_tied_timestamps(monkeypatch):
    monkeypatch.setattr(audit, "PAGE_SIZE", 3)
    entries = [
        AuditLog.objects.create(action="x", target_type="post", target_id=str(i), created_at=WHEN - timedelta(i // 2))
        for i in range(8)  # pairs share a timestamp, so only the id tells them apart
    ]
    seen, cursor = [], None
    for _ in range(5):
        rows, cursor = audit.audit_page(filters=audit.AuditFilters(), cursor=cursor)
        seen.extend(rows)
        if cursor is None:
            break
    expected = sorted(entries, key=lambda e: (e.created_at, e.pk), reverse=True)
    assert [e.pk for e in seen] == [e.pk for e in expected]


@pytest.mark.django_db
def test_score_sort_pages_through_unscored_posts_first():
    unscored = PostFactory.create_batch(3, final_score=None)
    scored = [PostFactory(final_score=s) for s in (0.9, 0.5, 0.5)]
    seen: list[int] = []
    cursor = None
    for _ in range(5):
        page = queue_page(filters=QueueFilters(sort="score"), cursor=cursor, page_size=2)
        seen.extend(r.post.pk for r in page.rows)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert sorted(seen[:3]) == sorted(p.pk for p in unscored)
    assert seen[3:] == [p.pk for p in scored]
