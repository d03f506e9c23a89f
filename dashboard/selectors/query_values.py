"""Filter values read from a page's query string, checked before they reach SQL.

A date must exist (2026-02-30 does not) and lie in [DATE_MIN, DATE_MAX]: 0001-01-01 at local
midnight is before year 1 in UTC, 9999-12-31 at local end of day after year 9999, and either
overflows when the database adapter converts it. A number must be finite, an IP address valid,
and no text value may hold NUL (PostgreSQL refuses it in a string). A bad value is left out of
the filter and described in ``errors``; the page shows them and answers 400."""

from __future__ import annotations

import ipaddress
import math
from datetime import date, datetime, time, timedelta

from django.db.models import Q
from django.http import QueryDict
from django.utils import timezone
from django.utils.dateparse import parse_date

DATE_MIN = date(1970, 1, 1)
DATE_MAX = date(9000, 12, 31)


def query_text(params: QueryDict, key: str, errors: list[str], *, max_length: int) -> str:
    value = params.get(key, "").strip()[:max_length]
    if "\x00" in value:
        errors.append(f"{key}: NUL characters are not allowed.")
        return ""
    return value


def query_date(params: QueryDict, key: str, errors: list[str]) -> date | None:
    raw = params.get(key, "").strip()
    if not raw:
        return None
    try:
        parsed = parse_date(raw[:32])
    except ValueError:  # well formed, but no such day
        parsed = None
    if parsed is None or not DATE_MIN <= parsed <= DATE_MAX:
        errors.append(f"{key}: not a valid date (YYYY-MM-DD, {DATE_MIN.year} to {DATE_MAX.year}).")
        return None
    return parsed


def query_float(params: QueryDict, key: str, errors: list[str]) -> float | None:
    raw = params.get(key, "").strip()
    if not raw:
        return None
    try:
        value = float(raw[:64])
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        errors.append(f"{key}: not a number.")
        return None
    return value


def query_ip(params: QueryDict, key: str, errors: list[str]) -> str:
    raw = params.get(key, "").strip()[:64]
    if not raw:
        return ""
    try:
        return ipaddress.ip_address(raw).compressed
    except ValueError:
        errors.append(f"{key}: not a valid IP address.")
        return ""


def day_range_q(field: str, date_from: date | None, date_to: date | None) -> Q:
    """`field` within the days from `date_from` to `date_to`, both included, in the current time
    zone: at or after date_from's midnight, and before the midnight that ends date_to (not
    "at or before 23:59:59.999999", which depends on the column's precision). The one date-range
    filter of the dashboard's pages (queue, audit log)."""
    tz = timezone.get_current_timezone()
    q = Q()
    if date_from:
        q &= Q(**{f"{field}__gte": datetime.combine(date_from, time.min, tz)})
    if date_to:
        q &= Q(**{f"{field}__lt": datetime.combine(date_to + timedelta(days=1), time.min, tz)})
    return q
