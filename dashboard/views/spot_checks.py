"""The Spot checks tab: automatic decisions drawn for a moderator to confirm
(dashboard.selectors.spot_checks), oldest first, as the queue's rows with the queue's keys."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.html import format_html

from dashboard.queue_rows import render_queue_rows
from dashboard.selectors.queue import queue_tab_counts
from dashboard.selectors.spot_checks import spot_check_rows
from dashboard.selectors.thresholds import live_thresholds
from dashboard.templatetags.dashboard import duration_s
from moderation.models import ReasonCode, Source
from moderation.permissions import CAN_MODERATE, role_required
from moderation.services.decisions import key_reason
from moderation.services.priority import sla_seconds

# Per drawn action (Post.spot_check_action): the row's word and its hover text.
NOTES: dict[str, tuple[str, str]] = {
    "approve": ("approved", "The models approved this post on their own; is it fine?"),
    "remove": ("removed", "The models removed this post on their own; was it a violation?"),
}


@role_required(CAN_MODERATE)
def spot_checks(request: HttpRequest) -> HttpResponse:
    source = request.GET.get("source", "").strip()
    rows = spot_check_rows(source_slug=source)
    notes = {
        row.post.pk: format_html(
            '<div class="reasons" data-spot-check="{}" title="{}"><span class="badge badge-teach">{}</span></div>',
            NOTES[row.post.spot_check_action][0],
            NOTES[row.post.spot_check_action][1],
            f"spot check: {NOTES[row.post.spot_check_action][0]} automatically",
        )
        for row in rows
        if row.post.spot_check_action in NOTES
    }
    reason_codes = list(ReasonCode.objects.filter(is_active=True))
    context = {
        "nav": "queue",
        "tab": "spot_checks",
        "rows": rows,
        # No selection: each check is one post's own call, never a bulk one.
        "rows_html": render_queue_rows(
            rows, thresholds=live_thresholds(), user_id=request.user.pk, notes=notes, selectable=False
        ),
        "source": source,
        "sources": list(Source.objects.only("slug", "name").order_by("name")),
        "reason_codes": reason_codes,
        "key_reasons": {label: key_reason(label=label, reason_codes=reason_codes) for label in ("spam", "ham")},
        "sla_label": duration_s(sla_seconds()),
        "tab_counts": queue_tab_counts(),
    }
    return render(request, "dashboard/spot_checks.html", context)
