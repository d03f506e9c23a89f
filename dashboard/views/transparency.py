"""The transparency report page and the statements of reasons download (JSON lines, the DSA
transparency database's submission fields, one statement a line)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone

from dashboard.selectors.transparency import transparency_report
from moderation.models import Source
from moderation.permissions import CAN_VIEW_METRICS, role_required
from moderation.selectors.statements import statement_lines, statements_for_export


def _source(request: HttpRequest) -> Source | None:
    slug = request.GET.get("source", "")
    return Source.objects.filter(slug=slug).first() if slug else None


@role_required(CAN_VIEW_METRICS)
def transparency(request: HttpRequest) -> HttpResponse:
    source = _source(request)
    context = {
        "report": transparency_report(source=source),
        "sources": list(Source.objects.order_by("name")),
        "source": source,
        "nav": "transparency",
    }
    return render(request, "dashboard/transparency.html", context)


@role_required(CAN_VIEW_METRICS)
def statements_download(request: HttpRequest) -> StreamingHttpResponse:
    source = _source(request)
    response = StreamingHttpResponse(
        statement_lines(statements_for_export(source=source)), content_type="application/x-ndjson"
    )
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    name = f"statements-{source.slug}-{stamp}" if source else f"statements-{stamp}"
    response["Content-Disposition"] = f'attachment; filename="{name}.jsonl"'
    return response
