"""The escalation ladder: a source's rules per category (LadderRule, edited by admins) turn
repeated warnings into a limit or a suspension. `ladder_decide` is the pure step, tested
table-driven; `ladder_apply` loads the author's live strikes and the rules, calls it and
imposes the rung through the same services a moderator uses, audited as `ladder.applied`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from moderation.enforcement_state import author_suspended
from moderation.models import Author, LadderAction, LadderRule, Restriction, RestrictionKind, Strike
from moderation.services.audit import audit_record
from moderation.services.enforcement import EnforcementReason, author_suspend
from moderation.services.sanctions import author_limit, restriction_active

# When two rungs need as many strikes, the heavier one applies.
_SEVERITY = {LadderAction.LIMIT_REACH: 1, LadderAction.LIMIT_RATE: 2, LadderAction.SUSPEND: 3}


@dataclass(frozen=True, slots=True)
class Rung:
    strikes: int
    window: timedelta
    action: str
    duration: timedelta | None = None


def ladder_decide(*, rungs: Sequence[Rung], strike_times: Sequence[datetime], now: datetime) -> Rung | None:
    """The highest rung the author has reached: the one needing the most strikes among those
    whose count of strikes within its own window reaches it. `strike_times` are the live
    strikes of one category (neither expired nor revoked)."""
    reached = [
        rung for rung in rungs if sum(1 for at in strike_times if now - rung.window <= at <= now) >= rung.strikes
    ]
    if not reached:
        return None
    return max(reached, key=lambda rung: (rung.strikes, _SEVERITY.get(LadderAction(rung.action), 0)))


def live_strikes(*, author: Author, category: str, now: datetime) -> list[Strike]:
    return list(
        Strike.objects.filter(author=author, category=category, revoked_at__isnull=True, expires_at__gt=now).order_by(
            "created_at"
        )
    )


def ladder_apply(*, strike: Strike, now: datetime | None = None) -> Author | Restriction | None:
    """After a strike is recorded (inside its transaction): impose the rung reached, unless it
    is already in place. Returns what was imposed, or None."""
    now = now or timezone.now()
    rules = LadderRule.objects.filter(source_id=strike.source_id, category=strike.category, is_active=True)
    rungs = [
        Rung(
            strikes=rule.strikes,
            window=timedelta(days=rule.window_days),
            action=rule.action,
            duration=timedelta(days=rule.duration_days) if rule.duration_days else None,
        )
        for rule in rules
    ]
    strikes = live_strikes(author=strike.author, category=strike.category, now=now)
    rung = ladder_decide(rungs=rungs, strike_times=[s.created_at for s in strikes], now=now)
    if rung is None:
        return None
    author = strike.author
    reason = EnforcementReason(
        code=strike.reason_code,
        note=f"{len(strikes)} strikes for {strike.category_label.lower()}",
        until=now + rung.duration if rung.duration else None,
    )
    imposed: Author | Restriction
    if rung.action == LadderAction.SUSPEND:
        if author_suspended(author, now=now):
            return None
        imposed = author_suspend(author=author, actor=None, reason=reason)
    else:
        if restriction_active(author=author, kind=RestrictionKind(rung.action)) is not None:
            return None
        imposed = author_limit(author=author, actor=None, kind=rung.action, reason=reason)
    audit_record(
        actor=None,
        action="ladder.applied",
        target=author,
        after={
            "category": strike.category,
            "action": rung.action,
            "strikes": [s.pk for s in strikes],
            "rule": f"{rung.strikes} strikes in {rung.window.days} days",
            "until": reason.until.isoformat() if reason.until else None,
        },
    )
    return imposed


def _rule_state(rule: LadderRule) -> dict[str, Any]:
    return {
        "source_id": rule.source_id,
        "category": rule.category,
        "strikes": rule.strikes,
        "window_days": rule.window_days,
        "action": rule.action,
        "duration_days": rule.duration_days,
        "is_active": rule.is_active,
    }


@transaction.atomic
def ladder_rule_save(*, rule: LadderRule, actor: Any) -> LadderRule:
    """Create or change a rung (the admin's form), audited with the before/after state."""
    previous = LadderRule.objects.filter(pk=rule.pk).first() if rule.pk else None
    rule.save()
    audit_record(
        actor=actor,
        action="ladder.rule_saved",
        target=rule,
        before=_rule_state(previous) if previous else {},
        after=_rule_state(rule),
    )
    return rule


@transaction.atomic
def ladder_rule_delete(*, rule: LadderRule, actor: Any) -> None:
    audit_record(actor=actor, action="ladder.rule_deleted", target=rule, before=_rule_state(rule))
    rule.delete()
