"""Times are stored in UTC and entered and shown in the moderator's zone: the browser's until
the moderator picks one, always with the zone named."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from moderation.models import Author
from tests.dashboard.dashboard_factories import AuthorFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403

pytestmark = pytest.mark.django_db


def test_the_browser_zone_is_kept_until_the_moderator_picks_one(mod_client):
    url = reverse("dashboard:timezone_browser")
    assert mod_client.post(url, {"tz": "Not/AZone"}).status_code == 400
    assert mod_client.post(url, {"tz": "America/New_York"}).json() == {"tz": "America/New_York"}
    assert "data-tz-link>America/New_York</a>" in mod_client.get(reverse("dashboard:queue")).content.decode()
    mod_client.post(reverse("dashboard:timezone"), {"tz": "Asia/Tokyo"})
    # The browser reporting again does not undo the choice.
    assert mod_client.post(url, {"tz": "America/New_York"}).json() == {"tz": "Asia/Tokyo"}
    assert mod_client.post(reverse("dashboard:timezone"), {"tz": "Mars/Olympus"}).status_code == 400


def test_a_suspension_expiry_is_read_in_the_moderators_zone_and_shown_zoned(mod_client):
    author = AuthorFactory()
    url = reverse("dashboard:enforce", args=["author", author.pk, "suspend"])
    form = {"reason_code": "bot-activity", "expires_at": "2999-11-27T09:00", "tz": "America/New_York", "next": "/"}
    # The form's own hidden field carries the browser's zone when no page reported it yet.
    assert mod_client.post(url, form).status_code == 302
    author = Author.objects.get(pk=author.pk)
    assert author.suspended_until == datetime(2999, 11, 27, 14, 0, tzinfo=UTC)
    html = mod_client.get(reverse("dashboard:author", args=[author.pk])).content.decode()
    assert "until 2999-11-27 09:00 EST" in html
    history = html[html.index("data-enforcement-history") :]
    assert "2999-11-27 09:00 EST" in history and "+00:00" not in history
    form_html = mod_client.get(url).content.decode()
    assert "In your time zone, America/New_York (E" in form_html  # EST or EDT, as the day falls
