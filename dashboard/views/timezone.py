"""The moderator's time zone: the browser reports its own, the moderator may pick another."""

from __future__ import annotations

from zoneinfo import available_timezones

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from dashboard.timezones import SESSION_CHOSEN, zone_remember
from dashboard.views.common import json_error, redirect_next
from moderation.permissions import ALL_ROLES, role_required


@require_POST
@role_required(ALL_ROLES)
def timezone_browser(request: HttpRequest) -> HttpResponse:
    """The zone the browser runs in (app.js, once per session); ignored after a choice."""
    name = request.POST.get("tz", "")
    if not zone_remember(request, name, chosen=False) and not request.session.get(SESSION_CHOSEN):
        return json_error("Unknown time zone.", code="invalid_timezone", status=400, fields={"tz": [name[:64]]})
    return JsonResponse({"tz": timezone.get_current_timezone_name()})


@require_http_methods(["GET", "POST"])
@role_required(ALL_ROLES)
def timezone_choose(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        name = request.POST.get("tz", "")
        if zone_remember(request, name, chosen=True):
            messages.success(request, f"Times are shown in {name}.")
            return redirect_next(request, reverse("dashboard:queue"))
        messages.error(request, "Choose a time zone from the list.")
    context = {"zones": sorted(available_timezones()), "current": timezone.get_current_timezone_name()}
    return render(request, "dashboard/timezone.html", context, status=400 if request.method == "POST" else 200)
