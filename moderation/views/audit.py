from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import Any

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from moderation.permissions import CAN_VIEW_AUDIT, can_moderate, role_required
from moderation.selectors.audit import AuditFilters, audit_csv_rows, audit_page, audit_undo_targets
from moderation.views.common import with_query


class _Echo:
    def write(self, value: str) -> str:
        return value


def _csv_safe(value: Any) -> Any:
    # Spreadsheet formula injection: text starting with = + - @ is shown, not evaluated.
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@"):
        return "'" + value
    return value


@role_required(CAN_VIEW_AUDIT)
def audit_log(request: HttpRequest) -> HttpResponse:
    filters = AuditFilters.from_query(request.GET)
    rows, cursor = audit_page(filters=filters, cursor=request.GET.get("cursor"))
    query = filters.as_query()
    return render(
        request,
        "moderation/audit.html",
        {
            "rows": rows,
            "undo": audit_undo_targets(rows=rows, user=request.user) if can_moderate(request.user) else {},
            "filters": filters,
            "nav": "audit",
            "next_url": with_query(reverse("moderation:audit"), {**query, "cursor": cursor}) if cursor else "",
            "csv_url": with_query(reverse("moderation:audit_csv"), query),
        },
    )


@role_required(CAN_VIEW_AUDIT)
def audit_csv(request: HttpRequest) -> StreamingHttpResponse:
    filters = AuditFilters.from_query(request.GET)
    writer = csv.writer(_Echo())

    def lines() -> Iterator[str]:
        for row in audit_csv_rows(filters=filters):
            yield writer.writerow([_csv_safe(v) for v in row])

    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response = StreamingHttpResponse(lines(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.csv"'
    return response
