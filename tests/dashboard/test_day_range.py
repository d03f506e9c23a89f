"""The dashboard's one date-range filter (dashboard.selectors.query_values.day_range_q): both
days included, in the current time zone, up to the last microsecond of the last day. The queue
and the audit log filter through it."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import pytest
from django.utils import timezone

from dashboard.selectors.query_values import day_range_q
from moderation.models import AuditLog


@pytest.mark.django_db
@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin"])
def test_both_days_are_included_to_their_last_microsecond(zone):
    with timezone.override(zone):
        tz = timezone.get_current_timezone()
        start = datetime(2026, 11, 20, tzinfo=tz)
        edges = {
            "before": start - timedelta(microseconds=1),
            "first": start,
            "last": start + timedelta(days=2) - timedelta(microseconds=1),
            "after": start + timedelta(days=2),
        }
        for name, at in edges.items():
            row = AuditLog.objects.create(action="test.edge", target_type="edge", target_id=name)
            AuditLog.objects.filter(pk=row.pk).update(created_at=at)
        found = AuditLog.objects.filter(day_range_q("created_at", date(2026, 11, 20), date(2026, 11, 21)))
        assert sorted(found.values_list("target_id", flat=True)) == ["first", "last"]
        only_from = AuditLog.objects.filter(day_range_q("created_at", date(2026, 11, 21), None))
        assert sorted(only_from.values_list("target_id", flat=True)) == ["after", "last"]
        assert AuditLog.objects.filter(day_range_q("created_at", None, None)).count() == 4
