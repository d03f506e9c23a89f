"""The campaign page: near-copies of one text within a source, and the way to decide them all
(the campaign cluster action, with its preview and undo)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from core.errors import NotFound
from dashboard.selectors.campaigns import campaign_page
from dashboard.selectors.thresholds import live_thresholds
from moderation.models import PostStatus
from moderation.permissions import CAN_MODERATE, role_required


@role_required(CAN_MODERATE)
def campaign(request: HttpRequest, campaign_id: int) -> HttpResponse:
    try:
        page = campaign_page(campaign_id=campaign_id)
    except NotFound as exc:
        raise Http404(str(exc)) from exc
    labels = dict(PostStatus.choices)
    statuses = [(labels.get(str(row["status"]), row["status"]), row["n"]) for row in page.statuses]
    context = {"page": page, "c": page.campaign, "statuses": statuses, "thresholds": live_thresholds()}
    return render(request, "dashboard/campaign.html", context)
