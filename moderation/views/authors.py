"""The author page: the author's history and the actions at hand."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from moderation.enforcement_state import author_allowlisted, author_suspended
from moderation.errors import NotFound
from moderation.permissions import CAN_MODERATE, role_required
from moderation.selectors.authors import author_page
from moderation.selectors.thresholds import live_thresholds


@role_required(CAN_MODERATE)
def author(request: HttpRequest, author_id: int) -> HttpResponse:
    try:
        page = author_page(author_id=author_id)
    except NotFound as exc:
        raise Http404(str(exc)) from exc
    now = timezone.now()
    context = {
        "page": page,
        "a": page.author,
        "suspended": author_suspended(page.author, now=now),
        "trusted": author_allowlisted(page.author, now=now),
        "thresholds": live_thresholds(),
    }
    return render(request, "moderation/author.html", context)
