"""Enforcement from the dashboard: suspend an author, trust (allow-list) an author, block or
trust a domain or an IP, and lift any of them. Each takes a reason (a ReasonCode code and a
note) and an optional expiry, writes one audit entry with the before/after state, and tells the
platform by signed webhook (moderation.signals.platform_event; scoring delivers it). Domain and
IP entries from here are global (every source's posts) and go through
moderation.services.blocklists; an author's go to the author's own source only.

What an entry does to scoring is in scoring.services.enforcement; when it applies (its expiry)
in moderation.enforcement_state."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.errors import ApplicationError
from moderation.models import Author, Domain, IpAddress, Label, ListStatus, Source, StatementOfReasons
from moderation.services import blocklists
from moderation.services.audit import audit_record
from moderation.services.reasons import reason_category, reason_code_check
from moderation.services.statements import Automation, StatementAction, statement_record
from moderation.signals import platform_event

EVENT_ENFORCEMENT = "enforcement"


class EnforcementRefused(ApplicationError):
    code = "enforcement_refused"
    status_code = 400


@dataclass(frozen=True, slots=True)
class EnforcementReason:
    """Why, as the form asks it: a reason code (required to impose, optional to lift), a free
    note and, to impose, when it stops applying (None: until lifted)."""

    code: str = ""
    note: str = ""
    until: datetime | None = None


def enforcement_reason_label(*, imposed: str, imposing: bool) -> str:
    """The label an enforcement's reason must have: what the action says about its target. A
        suspension or a block says spam and trust says not spam; lifting one says the opposite of
        what it lifts. `imposed`: "suspend", "restrict" (a warning, a rate or reach limit, a hidden
    post), "allowlist", "block" or "allow"."""
    says_spam = imposed in ("suspend", "restrict", ListStatus.BLOCK)
    return Label.SPAM if says_spam == imposing else Label.HAM


def _checked(reason: EnforcementReason, *, imposing: bool, imposed: str) -> EnforcementReason:
    fields: dict[str, list[str]] = {}
    if imposing and not reason.code:
        fields["reason_code"] = ["Choose a reason."]
    elif reason.code and imposed in _REASON_DOING:
        label = enforcement_reason_label(imposed=imposed, imposing=imposing)
        doing = _REASON_DOING[imposed][0 if imposing else 1]
        try:
            reason_code_check(label=label, reason_code=reason.code, doing=doing)
        except ApplicationError as exc:
            fields["reason_code"] = [exc.message]
    if imposing and reason.until is not None and reason.until <= timezone.now():
        fields["expires_at"] = ["The expiry must be in the future."]
    if fields:
        raise EnforcementRefused("Check the reason and the expiry.", fields=fields)
    return EnforcementReason(code=reason.code, note=reason.note.strip()[:255], until=reason.until if imposing else None)


# What the message calls imposing / lifting each kind of entry.
_REASON_DOING = {
    "suspend": ("a suspension", "lifting a suspension"),
    "restrict": ("a warning or a restriction", "lifting a restriction or revoking a warning"),
    "allowlist": ("trusting an author", "no longer trusting an author"),
    ListStatus.BLOCK: ("a block", "lifting a block"),
    ListStatus.ALLOW: ("trusting a domain or IP", "no longer trusting a domain or IP"),
}


def _tell(*, sources: list[Source], key: str, data: dict[str, Any]) -> None:
    platform_event.send(sender=Author, sources=sources, event_type=EVENT_ENFORCEMENT, key=key, data=data)


def _event(
    *, target: dict[str, Any], action: str, reason: EnforcementReason, actor: Any, at: datetime
) -> dict[str, Any]:
    return {
        "target": target,
        "action": action,
        "reason_code": reason.code,
        "note": reason.note,
        "expires_at": reason.until.isoformat() if reason.until else None,
        "at": at.isoformat(),
        "by": getattr(actor, "username", "") or "",
    }


# The same reason check and event for the other enforcement services (warnings and strikes,
# restrictions): one shape for every `enforcement` event the platform receives.
def reason_checked(reason: EnforcementReason, *, imposing: bool) -> EnforcementReason:
    """The reason check of a warning, a restriction or their lifting."""
    return _checked(reason, imposing=imposing, imposed="restrict")


enforcement_event = _event
enforcement_tell = _tell


# --- authors ----------------------------------------------------------------------------------


def _author_state(author: Author) -> dict[str, Any]:
    def iso(value: datetime | None) -> str | None:
        return value.isoformat() if value else None

    return {
        "suspended_at": iso(author.suspended_at),
        "suspended_reason_code": author.suspended_reason_code,
        "suspended_reason": author.suspended_reason,
        "suspended_until": iso(author.suspended_until),
        "allowlisted_at": iso(author.allowlisted_at),
        "allowlisted_reason_code": author.allowlisted_reason_code,
        "allowlisted_reason": author.allowlisted_reason,
        "allowlisted_until": iso(author.allowlisted_until),
    }


_AUTHOR_FIELDS = {
    "suspend": ("suspended_at", "suspended_reason_code", "suspended_reason", "suspended_until"),
    "allowlist": ("allowlisted_at", "allowlisted_reason_code", "allowlisted_reason", "allowlisted_until"),
}


@transaction.atomic
def _author_set(*, author: Author, actor: Any, what: str, impose: bool, reason: EnforcementReason) -> Author:
    reason = _checked(reason, imposing=impose, imposed=what)
    locked = Author.objects.select_for_update(of=("self",)).select_related("source").get(pk=author.pk)
    before = _author_state(locked)
    now = timezone.now()
    at_field, code_field, note_field, until_field = _AUTHOR_FIELDS[what]
    if impose:
        setattr(locked, at_field, getattr(locked, at_field) or now)
        values = (reason.code, reason.note, reason.until)
    else:
        setattr(locked, at_field, None)
        values = ("", "", None)
    for field, value in zip((code_field, note_field, until_field), values, strict=True):
        setattr(locked, field, value)
    locked.save(update_fields=[*_AUTHOR_FIELDS[what], "updated_at"])
    action = what if impose else f"un{what}"
    entry = audit_record(
        actor=actor,
        action=f"author.{action}",
        target=locked,
        before=before,
        after={**_author_state(locked), **({} if impose else {"reason_code": reason.code, "note": reason.note})},
    )
    target = {"type": "author", "external_id": locked.external_id}
    _tell(
        sources=[locked.source],
        key=str(entry.pk),
        data=_event(target=target, action=action, reason=reason, actor=actor, at=now),
    )
    if what == "suspend":
        _suspension_statement(author=locked, actor=actor, impose=impose, reason=reason, at=now)
    for field in _AUTHOR_FIELDS[what]:
        setattr(author, field, getattr(locked, field))
    return locked


def _suspension_statement(*, author: Author, actor: Any, impose: bool, reason: EnforcementReason, at: datetime) -> None:
    if not impose:
        StatementOfReasons.objects.filter(
            author=author, action=StatementAction.SUSPENSION, reversed_at__isnull=True
        ).update(reversed_at=at)
        return
    # A suspension without a user is the escalation ladder applying a moderator's warnings.
    automated = getattr(actor, "is_authenticated", False) is not True
    statement_record(
        source=author.source,
        author=author,
        post=None,
        action=StatementAction.SUSPENSION,
        category=reason_category(reason.code),
        reason_code=reason.code,
        note=reason.note,
        automated_decision=Automation.PARTIAL if automated else Automation.NONE,
        application_date=at,
        end_date=reason.until,
    )


def author_suspend(*, author: Author, actor: Any, reason: EnforcementReason) -> Author:
    """Suspend: the author's new posts are held for review or removed (never auto-approved)."""
    return _author_set(author=author, actor=actor, what="suspend", impose=True, reason=reason)


def author_unsuspend(*, author: Author, actor: Any, reason: EnforcementReason | None = None) -> Author:
    return _author_set(author=author, actor=actor, what="suspend", impose=False, reason=reason or EnforcementReason())


def author_allowlist(*, author: Author, actor: Any, reason: EnforcementReason) -> Author:
    """Trust: the models never remove the author's posts automatically (they queue instead)."""
    return _author_set(author=author, actor=actor, what="allowlist", impose=True, reason=reason)


def author_unallowlist(*, author: Author, actor: Any, reason: EnforcementReason | None = None) -> Author:
    return _author_set(author=author, actor=actor, what="allowlist", impose=False, reason=reason or EnforcementReason())


# --- domains and IPs (global) -------------------------------------------------------------------

_LIST_ACTIONS = {ListStatus.BLOCK: "block", ListStatus.ALLOW: "allow", ListStatus.UNKNOWN: "unlist"}


@transaction.atomic
def list_entry_set(
    *, row: Domain | IpAddress, status: str, actor: Any, reason: EnforcementReason
) -> Domain | IpAddress:
    """Block, trust (allow) or lift (unknown) a domain or an IP for every source."""
    imposing = status != ListStatus.UNKNOWN
    model = type(row)
    locked = model.objects.select_for_update().get(pk=row.pk)
    reason = _checked(reason, imposing=imposing, imposed=status if imposing else locked.status)
    entry = blocklists.list_status_set(
        row=locked,
        status=status,
        reason=reason.note,
        reason_code=reason.code,
        until=reason.until,
        actor=actor,
    )
    row.refresh_from_db(fields=["status", "status_reason", "status_reason_code", "status_changed_at", "status_until"])
    if entry is not None:
        kind = "domain" if isinstance(row, Domain) else "ip"
        target = {"type": kind, "value": str(row)}
        data = _event(
            target=target, action=_LIST_ACTIONS[ListStatus(status)], reason=reason, actor=actor, at=timezone.now()
        )
        # A global entry decides every source's posts, so every platform hears of it.
        _tell(sources=list(Source.objects.exclude(callback_url="")), key=str(entry.pk), data=data)
    return row
