"""Login lockouts in force now, as django-axes decides them: a username or a client address
whose failures within the cool-off reach AXES_FAILURE_LIMIT (settings: the lockout section).
Axes keeps one AccessAttempt row per username, address and browser; the lock of a username (or
an address) is the largest failure count among its rows, as axes' database handler reads it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from axes.helpers import get_cool_off
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Max

LOCKOUT_KINDS = ("username", "ip_address")


@dataclass(frozen=True, slots=True)
class Lockout:
    kind: str  # "username" or "ip_address"
    value: str
    failures: int
    last_failure: datetime
    ends_at: datetime


def lockouts_current(*, now: datetime) -> list[Lockout]:
    """Every locked username and address, the latest failure first."""
    cool_off = get_cool_off() or timedelta(0)
    recent = AccessAttempt.objects.filter(
        attempt_time__gte=now - cool_off, failures_since_start__gte=settings.AXES_FAILURE_LIMIT
    )
    found: list[Lockout] = []
    for kind in LOCKOUT_KINDS:
        rows = recent.values(kind).annotate(failures=Max("failures_since_start"), last=Max("attempt_time"))
        for row in rows:
            if row[kind]:  # axes leaves a username empty when the form had none
                found.append(Lockout(kind, row[kind], row["failures"], row["last"], row["last"] + cool_off))
    return sorted(found, key=lambda lock: lock.last_failure, reverse=True)
