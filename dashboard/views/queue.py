from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.urls import reverse

from dashboard.queue_rows import render_queue_rows
from dashboard.selectors.assignment import assign_target_choices, assignable_moderators, specialist_queues
from dashboard.selectors.queue import (
    CATEGORY_CHOICES,
    SORT_CHOICES,
    STATUS_CHOICES,
    QueueFilters,
    assignment_choices,
    queue_languages,
    queue_page,
    queue_queryset,
    queue_tab_counts,
)
from dashboard.selectors.thresholds import live_thresholds
from dashboard.templatetags.dashboard import duration_s, language_name
from dashboard.views.common import is_htmx, with_query
from moderation.models import ReasonCode, Source
from moderation.permissions import ALL_ROLES, CAN_MODERATE, can_moderate, role_required
from moderation.services.assignment import servable_q
from moderation.services.claims import claim_next
from moderation.services.decisions import key_reason
from moderation.services.priority import sla_seconds

SORT_NOTES = {"priority": "most urgent first", "score": "highest score first", "age": "oldest first"}


def _sort_note(filters: QueueFilters) -> str:
    if filters.view == "reported":
        return "heaviest reports first"
    if filters.status == "queued":
        return SORT_NOTES[filters.sort]
    return "newest first"


@role_required(ALL_ROLES)
def home(request: HttpRequest) -> HttpResponseBase:
    """Moderators land on the queue, analysts on the metrics."""
    if can_moderate(request.user):
        return queue(request)
    return HttpResponseRedirect(reverse("dashboard:metrics"))


@role_required(CAN_MODERATE)
def queue(request: HttpRequest) -> HttpResponse:
    return _queue_page(request)


def _queue_page(request: HttpRequest) -> HttpResponse:
    filters = QueueFilters.from_query(request.GET, user_id=request.user.pk)
    page = queue_page(filters=filters, cursor=request.GET.get("cursor"))
    query = filters.as_query()
    next_url = with_query(reverse("dashboard:queue"), {**query, "cursor": page.next_cursor}) if page.next_cursor else ""
    thresholds = live_thresholds()
    context = {
        "page": page,
        "rows_html": render_queue_rows(page.rows, thresholds=thresholds, user_id=request.user.pk),
        "filters": filters,
        "filter_query": query,
        "next_url": next_url,
    }
    status = 400 if filters.errors else 200  # the page says which filters it left out
    if is_htmx(request) and request.GET.get("cursor"):
        return render(request, "dashboard/_queue_rows.html", context, status=status)
    reason_codes = list(ReasonCode.objects.filter(is_active=True))
    queues = specialist_queues()
    context.update(
        {
            "nav": "queue",
            "reason_codes": reason_codes,
            "sources": list(Source.objects.only("slug", "name").order_by("name")),
            "status_choices": STATUS_CHOICES,
            "sort_choices": SORT_CHOICES,
            "category_choices": CATEGORY_CHOICES,
            "assignment_choices": assignment_choices(queues),
            "assign_choices": assign_target_choices(moderators=assignable_moderators(), queues=queues),
            "sort_note": _sort_note(filters),
            "sla_label": duration_s(sla_seconds()),
            "key_reasons": {label: key_reason(label=label, reason_codes=reason_codes) for label in ("spam", "ham")},
            "focus_url": with_query(reverse("dashboard:focus"), query),
            "tab_counts": queue_tab_counts(),
            # The language picker: the codes posts can carry, by their names.
            "languages": sorted(
                ((code, language_name(code)) for code in queue_languages()), key=lambda pair: pair[1].lower()
            ),
        }
    )
    return render(request, "dashboard/queue.html", context, status=status)


@role_required(CAN_MODERATE)
def focus(request: HttpRequest) -> HttpResponse:
    """One-item mode: claim the next item nobody holds and open it; decisions come back here."""
    filters = QueueFilters.from_query(request.GET, user_id=request.user.pk)
    if filters.errors:
        return _queue_page(request)  # the queue page, with the errors and a 400
    skipped = [int(i) for i in request.session.get("focus_skip", [])]
    servable = queue_queryset(filters=filters).filter(servable_q(user=request.user))
    post = claim_next(user=request.user, base_queryset=servable.exclude(pk__in=skipped))
    if post is None and skipped:
        request.session["focus_skip"] = []  # a full pass done: offer the skipped ones again
        post = claim_next(user=request.user, base_queryset=servable)
    if post is None:
        messages.info(request, "The queue is empty: nothing left to review with these filters.")
        return HttpResponseRedirect(with_query(reverse("dashboard:queue"), filters.as_query()))
    params = {**filters.as_query(), "focus": "1"}
    return HttpResponseRedirect(with_query(reverse("dashboard:post_detail", args=[post.pk]), params))
