from __future__ import annotations

from collections.abc import Iterator

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from core.spreadsheet import csv_writer
from dashboard.selectors.audit import AuditFilters, audit_csv_rows, audit_page, audit_undo_targets
from dashboard.views.common import with_query
from moderation.permissions import CAN_VIEW_AUDIT, can_moderate, role_required


class _Echo:
    def write(self, value: str) -> str:
        return value


@role_required(CAN_VIEW_AUDIT)
def audit_log(request: HttpRequest) -> HttpResponse:
    filters = AuditFilters.from_query(request.GET)
    rows, cursor = audit_page(filters=filters, cursor=request.GET.get("cursor"))
    query = filters.as_query()
    return render(
        request,
        "dashboard/audit.html",
        {
            "rows": rows,
            "undo": audit_undo_targets(rows=rows, user=request.user) if can_moderate(request.user) else {},
            "filters": filters,
            "nav": "audit",
            "next_url": with_query(reverse("dashboard:audit"), {**query, "cursor": cursor}) if cursor else "",
            "csv_url": with_query(reverse("dashboard:audit_csv"), query),
        },
        status=400 if filters.errors else 200,
    )


@role_required(CAN_VIEW_AUDIT)
def audit_csv(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    filters = AuditFilters.from_query(request.GET)
    if filters.errors:
        return HttpResponse("\n".join(filters.errors), status=400, content_type="text/plain; charset=utf-8")
    writer = csv_writer(_Echo())

    def lines() -> Iterator[str]:
        for row in audit_csv_rows(filters=filters):
            yield writer.writerow(row)

    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response = StreamingHttpResponse(lines(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.csv"'
    return response
