"""The transparency report: statements of reasons per month, counted by policy category, by
action and by automation, with the median time from posting to action. Two grouped queries
whatever the number of statements."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from django.db.models import Aggregate, Count, DurationField, ExpressionWrapper, F, QuerySet
from django.db.models.functions import TruncMonth

from moderation.categories import policy_categories
from moderation.models import Source, StatementOfReasons
from moderation.services.statements import StatementAction


class Median(Aggregate):
    """PostgreSQL's ordered-set aggregate; Django ships no median."""

    function = "percentile_cont"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = DurationField()


@dataclass
class MonthRow:
    month: date
    total: int = 0
    by_category: dict[str, int] = field(default_factory=dict)
    by_action: dict[str, int] = field(default_factory=dict)
    automated: int = 0
    manual: int = 0
    median_time_to_action: timedelta | None = None


@dataclass
class TransparencyReport:
    months: list[MonthRow]
    categories: list[tuple[str, str]]
    actions: tuple[str, ...]


def _rows(*, source: Source | None, since: datetime | None) -> QuerySet[StatementOfReasons]:
    rows = StatementOfReasons.objects.all()
    if source is not None:
        rows = rows.filter(source=source)
    if since is not None:
        rows = rows.filter(application_date__gte=since)
    return rows


def transparency_report(*, source: Source | None = None, since: datetime | None = None) -> TransparencyReport:
    """Newest month first. A reversed restriction still counts: it was applied."""
    months: dict[date, MonthRow] = {}
    counts: dict[date, dict[str, defaultdict[str, int]]] = {}
    grouped = (
        _rows(source=source, since=since)
        .annotate(month=TruncMonth("application_date"))
        .values("month", "category", "action", "automated")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for group in grouped:
        month = _as_date(group["month"])
        row = months.setdefault(month, MonthRow(month=month))
        tally = counts.setdefault(month, {"category": defaultdict(int), "action": defaultdict(int)})
        row.total += group["n"]
        tally["category"][group["category"]] += group["n"]
        tally["action"][group["action"]] += group["n"]
        if group["automated"]:
            row.automated += group["n"]
        else:
            row.manual += group["n"]
    delay = ExpressionWrapper(F("application_date") - F("content_date"), output_field=DurationField())
    medians = (
        _rows(source=source, since=since)
        .filter(content_date__isnull=False)
        .annotate(month=TruncMonth("application_date"))
        .values("month")
        .annotate(median=Median(delay))
        .order_by()
    )
    for median in medians:
        month = _as_date(median["month"])
        if month in months:
            months[month].median_time_to_action = median["median"]
    for month, row in months.items():
        row.by_category = dict(counts[month]["category"])
        row.by_action = dict(counts[month]["action"])
    return TransparencyReport(
        months=sorted(months.values(), key=lambda r: r.month, reverse=True),
        categories=policy_categories(),
        actions=StatementAction.ALL,
    )


def _as_date(value: Any) -> date:
    return value.date() if isinstance(value, datetime) else value
