"""The audit log, filtered, newest first, keyset-paginated on (created_at, id)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from django.db.models import QuerySet
from django.http import QueryDict

from dashboard.selectors.keyset import Cursor, after_cursor_q
from dashboard.selectors.query_values import day_range_q, query_date, query_text
from moderation.models import AuditLog, BulkAction, Decision

PAGE_SIZE = 100
AUDIT_ORDER = ("-created_at", "-id")
CURSOR_TYPES: dict[str, type] = {"created_at": datetime, "id": int}


@dataclass
class AuditFilters:
    actor: str = ""
    action: str = ""
    target_type: str = ""
    target_id: str = ""
    date_from: date | None = None
    date_to: date | None = None
    errors: list[str] = field(default_factory=list)

    @classmethod
    def from_query(cls, params: QueryDict) -> AuditFilters:
        """The filters of a query string; a value that is not valid is left out and described
        in ``errors`` (dashboard.selectors.query_values)."""
        errors: list[str] = []
        return cls(
            actor=query_text(params, "actor", errors, max_length=150),
            action=query_text(params, "action", errors, max_length=64),
            target_type=query_text(params, "target_type", errors, max_length=64),
            target_id=query_text(params, "target_id", errors, max_length=64),
            date_from=query_date(params, "date_from", errors),
            date_to=query_date(params, "date_to", errors),
            errors=errors,
        )

    def as_query(self) -> dict[str, str]:
        return {k: str(v) for k, v in self.__dict__.items() if k != "errors" and v not in ("", None)}


def audit_queryset(*, filters: AuditFilters) -> QuerySet[AuditLog]:
    qs = AuditLog.objects.select_related("actor")
    if filters.actor:
        qs = qs.filter(actor__username=filters.actor)
    if filters.action:
        qs = qs.filter(action__startswith=filters.action)
    if filters.target_type:
        qs = qs.filter(target_type=filters.target_type)
    if filters.target_id:
        qs = qs.filter(target_id=filters.target_id)
    qs = qs.filter(day_range_q("created_at", filters.date_from, filters.date_to))
    return qs.order_by(*AUDIT_ORDER)


def audit_page(*, filters: AuditFilters, cursor: str | None = None) -> tuple[list[AuditLog], str | None]:
    qs = audit_queryset(filters=filters)
    decoded = Cursor.decode(cursor, order=AUDIT_ORDER, types=CURSOR_TYPES) if cursor else None
    if decoded is not None:
        qs = qs.filter(after_cursor_q(decoded))
    rows = list(qs[: PAGE_SIZE + 1])
    nxt = Cursor.after(rows[PAGE_SIZE - 1], order=AUDIT_ORDER).encode() if len(rows) > PAGE_SIZE else None
    return rows[:PAGE_SIZE], nxt


def audit_csv_rows(*, filters: AuditFilters) -> Iterator[list[Any]]:
    yield ["id", "created_at", "actor", "action", "target_type", "target_id", "before", "after"]
    import json

    for e in audit_queryset(filters=filters).iterator(chunk_size=2000):
        yield [
            e.pk,
            e.created_at.isoformat(),
            e.actor.username if e.actor else "",
            e.action,
            e.target_type,
            e.target_id,
            json.dumps(e.before, sort_keys=True),
            json.dumps(e.after, sort_keys=True),
        ]


@dataclass(frozen=True)
class UndoTarget:
    kind: str  # "decision" | "bulk"
    pk: int


def audit_undo_targets(*, rows: list[AuditLog], user: Any) -> dict[int, UndoTarget]:
    """audit row id -> what its Undo button undoes, for the decisions and bulk actions on the
    page that this user can still undo (two queries)."""
    from moderation.services.bulk import bulk_can_undo
    from moderation.services.decisions import decision_can_undo

    decision_rows = {e.pk: e.after.get("decision_id") for e in rows if e.action == "post.decide"}
    bulk_rows = {e.pk: int(e.target_id) for e in rows if e.action == "bulk.decide" and e.target_id.isdigit()}
    decisions = Decision.objects.in_bulk([int(i) for i in decision_rows.values() if isinstance(i, int)])
    bulks = BulkAction.objects.in_bulk(list(bulk_rows.values()))
    out: dict[int, UndoTarget] = {}
    for row_id, decision_id in decision_rows.items():
        decision = decisions.get(decision_id) if isinstance(decision_id, int) else None
        if decision is not None and decision_can_undo(decision=decision, user=user):
            out[row_id] = UndoTarget("decision", decision.pk)
    for row_id, bulk_id in bulk_rows.items():
        bulk = bulks.get(bulk_id)
        if bulk is not None and bulk_can_undo(bulk=bulk, user=user):
            out[row_id] = UndoTarget("bulk", bulk.pk)
    return out
