"""The transparency report (counts per month by category, action and automation, median time
to action) and the statements download."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from dashboard.selectors.transparency import transparency_report
from moderation.models import StatementOfReasons
from tests.dashboard.dashboard_fixtures import *  # noqa: F403
from tests.scoring.pipeline_support import make_source

pytestmark = pytest.mark.django_db

MARCH = datetime(2026, 3, 10, 12, tzinfo=UTC)
APRIL = datetime(2026, 4, 10, 12, tzinfo=UTC)


def _statement(source, *, applied, action="removal", category="spam", automated=False, delay_h=None):
    return StatementOfReasons.objects.create(
        source=source,
        action=action,
        category=category,
        automated=automated,
        application_date=applied,
        content_date=applied - timedelta(hours=delay_h) if delay_h is not None else None,
        fields={"puid": f"{source.slug}:{action}:{applied.isoformat()}"},
    )


def test_counts_and_median_per_month():
    source = make_source()
    _statement(source, applied=MARCH, delay_h=1)
    _statement(source, applied=MARCH, delay_h=3, category="abuse", action="hide")
    _statement(source, applied=MARCH, delay_h=8, automated=True)
    _statement(source, applied=MARCH, action="suspension", automated=True)  # no content: no delay
    _statement(source, applied=APRIL, delay_h=2, category="scam")
    _statement(make_source(), applied=APRIL, delay_h=50)  # another source
    report = transparency_report(source=source)
    april, march = report.months
    assert (march.month.isoformat(), march.total, march.automated, march.manual) == ("2026-03-01", 4, 2, 2)
    assert march.by_category == {"spam": 3, "abuse": 1}
    assert march.by_action == {"removal": 2, "hide": 1, "suspension": 1}
    assert march.median_time_to_action == timedelta(hours=3)
    assert (april.total, april.by_category, april.median_time_to_action) == (1, {"scam": 1}, timedelta(hours=2))
    assert transparency_report().months[0].median_time_to_action == timedelta(hours=26)  # both sources


def test_the_page_and_the_download(mod_client):
    source = make_source(slug="chirp")
    _statement(source, applied=MARCH, delay_h=1)
    page = mod_client.get(reverse("dashboard:transparency"), {"source": "chirp"})
    assert page.status_code == 200
    assert 'data-month="2026-03"' in page.content.decode()
    download = mod_client.get(reverse("dashboard:statements_download"), {"source": "chirp"})
    assert download["Content-Type"] == "application/x-ndjson"
    lines = b"".join(download.streaming_content).decode().splitlines()
    assert [json.loads(line)["puid"] for line in lines] == [f"chirp:removal:{MARCH.isoformat()}"]


def test_anonymous_users_get_no_report(client):
    assert client.get(reverse("dashboard:transparency")).status_code in (302, 403)
