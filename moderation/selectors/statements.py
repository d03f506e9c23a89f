"""Reads of statements of reasons shared by the API, the export command and the dashboard. A
source sees its own statements only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime

from django.db.models import QuerySet

from core.errors import NotFound
from moderation.models import Source, StatementOfReasons


def _rows() -> QuerySet[StatementOfReasons]:
    return StatementOfReasons.objects.select_related("post", "author")


def statement_get_for_source(*, source: Source, statement_id: int) -> StatementOfReasons:
    row = _rows().filter(source=source, pk=statement_id).first()
    if row is None:
        raise NotFound("No statement of reasons with this id.", code="statement_not_found")
    return row


def statement_for_decision(*, source: Source, decision_id: int) -> StatementOfReasons:
    row = _rows().filter(source=source, decision_id=decision_id).first()
    if row is None:
        raise NotFound("No statement of reasons for this decision.", code="statement_not_found")
    return row


def statements_for_export(
    *, source: Source | None = None, since: datetime | None = None, until: datetime | None = None
) -> QuerySet[StatementOfReasons]:
    """In the order they were issued; `since` inclusive, `until` exclusive."""
    rows = StatementOfReasons.objects.order_by("application_date", "pk")
    if source is not None:
        rows = rows.filter(source=source)
    if since is not None:
        rows = rows.filter(application_date__gte=since)
    if until is not None:
        rows = rows.filter(application_date__lt=until)
    return rows


def statement_lines(rows: QuerySet[StatementOfReasons]) -> Iterator[str]:
    """One statement a line in the transparency database's submission fields (JSON lines)."""
    for row in rows.only("fields").iterator(chunk_size=500):
        yield json.dumps(row.fields, ensure_ascii=False, sort_keys=True) + "\n"
