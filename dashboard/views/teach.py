"""The Teach tab: the queue's rows, keys and filters, in the order of what a label teaches most
(dashboard.selectors.teach). The Queue tab keeps its own order."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from dashboard.queue_rows import render_queue_rows
from dashboard.selectors.assignment import assign_target_choices, assignable_moderators, specialist_queues
from dashboard.selectors.queue import QueueFilters, queue_tab_counts
from dashboard.selectors.teach import teach_filters, teach_page
from dashboard.selectors.thresholds import live_thresholds
from dashboard.teach import TeachPick
from dashboard.templatetags.dashboard import duration_s
from moderation.models import ReasonCode, Source
from moderation.permissions import CAN_MODERATE, role_required
from moderation.services.decisions import key_reason
from moderation.services.priority import sla_seconds

REASON_TITLES = {
    "uncertain": "The score sits near the line between approving and removing",
    "unfamiliar": "The text is unlike what the text model trained on",
    "new kind": "The text is far past the familiarity limit: a kind the model has not seen",
}


def teach_note(pick: TeachPick) -> SafeString:
    """The row's "why it is here": its reasons and the value behind the order."""
    reasons = pick.reasons or ("closest call left",)
    badges = format_html_join(
        "",
        '<span class="badge badge-teach" title="{}" data-teach-reason="{}">{}</span>',
        ((REASON_TITLES.get(r, "Nothing more telling is left in the queue"), r, r) for r in reasons),
    )
    leans: dict[bool | None, str] = {
        True: "; the models lean to violation",
        False: "; the models lean to legitimate",
        None: "",
    }
    lean = leans[pick.leans_violation]
    title = (
        f"Teach value {pick.value:.2f}: uncertainty {pick.uncertainty:.2f} + novelty {pick.novelty:.2f}, "
        f"less for repeats and for the side the page already leans to{lean}"
    )
    return format_html('<div class="reasons" data-teach title="{}">{}</div>', title, badges)


@role_required(CAN_MODERATE)
def teach(request: HttpRequest) -> HttpResponse:
    filters = teach_filters(QueueFilters.from_query(request.GET, user_id=request.user.pk))
    page = teach_page(filters=filters)
    notes = {post_id: teach_note(pick) for post_id, pick in page.picks.items()}
    reason_codes = list(ReasonCode.objects.filter(is_active=True))
    context = {
        "nav": "queue",
        "tab": "teach",
        "page": page,
        "rows_html": render_queue_rows(page.rows, thresholds=live_thresholds(), user_id=request.user.pk, notes=notes),
        "filters": filters,
        "reason_codes": reason_codes,
        "sources": list(Source.objects.only("slug", "name").order_by("name")),
        "key_reasons": {label: key_reason(label=label, reason_codes=reason_codes) for label in ("spam", "ham")},
        "sla_label": duration_s(sla_seconds()),
        "tab_counts": queue_tab_counts(),
        "assign_choices": assign_target_choices(moderators=assignable_moderators(), queues=specialist_queues()),
    }
    return render(request, "dashboard/teach.html", context, status=400 if filters.errors else 200)
