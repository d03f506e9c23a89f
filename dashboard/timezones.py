"""The moderator's time zone. Times are stored in UTC; every dashboard page is rendered, and
every date-time a moderator types is read, in the zone kept in the session: the browser's
(app.js sends Intl.DateTimeFormat().resolvedOptions().timeZone on the first page) until the
moderator picks one on the time zone page. The zone is always named where a time is shown."""

from __future__ import annotations

from collections.abc import Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from django.http import HttpRequest, HttpResponse
from django.utils import timezone

SESSION_ZONE = "dashboard_tz"
SESSION_CHOSEN = "dashboard_tz_chosen"  # set when the moderator picked the zone themselves


def zone_or_none(name: str | None) -> ZoneInfo | None:
    """A valid IANA zone name as a ZoneInfo, else None (a bad or missing name is ignored)."""
    if not name or len(name) > 64 or name not in available_timezones():
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def zone_remember(request: HttpRequest, name: str, *, chosen: bool) -> bool:
    """Keep `name` as the session's zone. The browser's zone never replaces one the moderator
    chose. Returns whether the zone was kept."""
    if zone_or_none(name) is None:
        return False
    if not chosen and request.session.get(SESSION_CHOSEN):
        return False
    request.session[SESSION_ZONE] = name
    request.session[SESSION_CHOSEN] = chosen
    timezone.activate(ZoneInfo(name))
    return True


class ModeratorTimezoneMiddleware:
    """Activate the session's zone for the request (after the session middleware)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        zone = zone_or_none(request.session.get(SESSION_ZONE)) if hasattr(request, "session") else None
        if zone is not None:
            timezone.activate(zone)
        else:
            timezone.deactivate()
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()
