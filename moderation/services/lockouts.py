"""Lifting a login lockout by hand (the dashboard's lockouts page), audited."""

from __future__ import annotations

from typing import Any

from axes.utils import reset
from django.db import transaction

from moderation.selectors.lockouts import LOCKOUT_KINDS
from moderation.services.audit import audit_record


def lockout_lift(*, actor: Any, kind: str, value: str) -> int:
    """Forget the failed logins of one username or one client address, which ends its lock at
    once; returns how many axes attempt rows went. The failure log (AccessFailureLog) stays."""
    if kind not in LOCKOUT_KINDS or not value:
        raise ValueError(f"unknown lockout {kind!r}={value!r}")
    with transaction.atomic():
        removed = reset(**{"username" if kind == "username" else "ip": value})
        audit_record(
            actor=actor,
            action="account.unlocked",
            target_type="user" if kind == "username" else "ip_address",
            target_id=value[:64],
            before={kind: value, "attempt_rows": removed},
            after={kind: value, "attempt_rows": 0},
        )
    return int(removed)
