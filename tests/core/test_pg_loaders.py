"""core.pg_loaders: the C-parsed timestamptz loader gives what Django's own loader gives, the
same instant with the same tzinfo object, and psycopg's errors for what ISO parsing refuses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import psycopg
import pytest
from django.db import connection
from django.db.backends.postgresql.psycopg_any import BaseTzLoader

from core.pg_loaders import IsoTimestamptzLoader, iso_timestamptz_loader
from tests.scoring.pipeline_support import make_post

pytestmark = pytest.mark.django_db

TIMESTAMPTZ_OID = 1184
VALUES = [
    b"2026-11-27 14:08:14.123456+00",
    b"2026-11-27 14:08:14+00",
    b"2026-11-27 14:08:14.5+05:30",
    b"2026-03-29 01:30:00.000001-03:30",
    b"0001-01-01 00:00:00+00",
    b"9999-12-31 23:59:59.999999+00",
]
REFUSED = [b"infinity", b"-infinity", b"2000-01-01 00:00:00+00 BC"]


def _loaders(zone):
    connection.ensure_connection()
    django_class = type("DjangoLoader", (BaseTzLoader,), {"timezone": zone})
    context = connection.connection
    return django_class(TIMESTAMPTZ_OID, context), iso_timestamptz_loader(zone)(TIMESTAMPTZ_OID, context)


@pytest.mark.parametrize("raw", VALUES)
def test_the_same_value_and_zone_as_djangos_loader(raw: bytes) -> None:
    django_loader, ours = _loaders(UTC)
    expected, got = django_loader.load(raw), ours.load(raw)
    assert got == expected
    assert got.tzinfo is expected.tzinfo is UTC
    assert got.utcoffset() == timedelta(0)


@pytest.mark.parametrize("raw", REFUSED)
def test_what_iso_parsing_refuses_fails_as_psycopg_fails(raw: bytes) -> None:
    django_loader, ours = _loaders(UTC)
    with pytest.raises(psycopg.DataError) as expected:
        django_loader.load(raw)
    with pytest.raises(psycopg.DataError) as got:
        ours.load(raw)
    assert str(got.value) == str(expected.value)


def test_a_zone_other_than_utc_keeps_the_instant() -> None:
    zone = timezone(timedelta(hours=-5))
    got = iso_timestamptz_loader(zone)(TIMESTAMPTZ_OID, None).load(b"2026-11-27 14:08:14.123456+00")
    assert got.tzinfo is zone
    assert got == datetime(2026, 11, 27, 14, 8, 14, 123456, tzinfo=UTC)
    naive = iso_timestamptz_loader(None)(TIMESTAMPTZ_OID, None).load(b"2026-11-27 14:08:14+00")
    assert naive == datetime(2026, 11, 27, 14, 8, 14, tzinfo=UTC).replace(tzinfo=None) and naive.tzinfo is None


AMSTERDAM_VALUES = [
    b"2026-11-27 14:08:14.123456+00",
    b"2026-10-25 00:30:00+00",  # 02:30 summer time, the first of the two 02:30s that night
    b"2026-10-25 01:30:00+00",  # 02:30 winter time, the second (fold 1)
    b"2026-03-29 01:30:00+00",  # just after the spring gap
]


@pytest.mark.parametrize("raw", AMSTERDAM_VALUES)
def test_in_a_zone_with_daylight_saving_as_djangos_loader(raw: bytes) -> None:
    """A deployment whose DATABASES TIME_ZONE is not UTC: the session and Django's zone agree,
    and the two loaders give the same instant, wall time and fold, in the same zone object."""
    zone = ZoneInfo("Europe/Amsterdam")
    with psycopg.connect(_dsn(), options="-c TimeZone=Europe/Amsterdam") as session:
        expected = type("DjangoLoader", (BaseTzLoader,), {"timezone": zone})(TIMESTAMPTZ_OID, session).load(raw)
        got = iso_timestamptz_loader(zone)(TIMESTAMPTZ_OID, session).load(raw)
    assert got == expected
    assert (got.replace(tzinfo=None), got.fold, got.tzinfo) == (expected.replace(tzinfo=None), expected.fold, zone)


def test_the_edge_of_the_calendar_falls_back_as_django_does() -> None:
    zone = ZoneInfo("America/New_York")
    with psycopg.connect(_dsn(), options="-c TimeZone=America/New_York") as session:
        loaders = [
            type("DjangoLoader", (BaseTzLoader,), {"timezone": zone})(TIMESTAMPTZ_OID, session),
            iso_timestamptz_loader(zone)(TIMESTAMPTZ_OID, session),
        ]
        for raw in (b"9999-12-31 23:59:59-05", b"0001-01-01 00:00:00+00"):
            outcomes = []
            for loader in loaders:
                try:
                    outcomes.append(loader.load(raw))
                except (psycopg.DataError, OverflowError) as exc:
                    outcomes.append(type(exc).__name__)
            assert outcomes[0] == outcomes[1], raw


def _dsn() -> str:
    settings = connection.settings_dict
    return psycopg.conninfo.make_conninfo(
        dbname=settings["NAME"],
        user=settings["USER"],
        password=settings["PASSWORD"] or None,
        host=settings["HOST"] or None,
        port=str(settings["PORT"] or "") or None,
    )


def test_djangos_connections_read_timestamps_with_it() -> None:
    connection.ensure_connection()
    loader = connection.connection.adapters.get_loader(TIMESTAMPTZ_OID, psycopg.pq.Format.TEXT)
    assert issubclass(loader, IsoTimestamptzLoader) and loader.timezone is connection.timezone
    received = datetime(2026, 11, 27, 14, 8, 14, 123456, tzinfo=UTC)
    post = make_post(received_at=received)
    with connection.cursor() as cursor:  # Django's cursor keeps it: the zones agree
        cursor.execute("SELECT received_at FROM moderation_post WHERE id = %s", [post.pk])
        (value,) = cursor.fetchone()
    assert value == received and value.tzinfo is UTC
    assert type(post).objects.get(pk=post.pk).received_at == received
