"""Enforcement from the dashboard: block/unblock a domain or an IP, suspend/unsuspend an
author. Each is one audited action with the before/after state."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from moderation.models import Author, Domain, IpAddress, ListStatus
from moderation.services.audit import audit_record


def _list_state(obj: Domain | IpAddress) -> dict[str, Any]:
    return {"status": obj.status, "status_reason": obj.status_reason}


@transaction.atomic
def _set_list_status(*, obj: Domain | IpAddress, status: str, reason: str, actor: Any, action: str) -> None:
    obj = type(obj).objects.select_for_update().get(pk=obj.pk)
    before = _list_state(obj)
    obj.status = status
    obj.status_reason = reason[:255]
    obj.save(update_fields=["status", "status_reason"])
    audit_record(actor=actor, action=action, target=obj, before=before, after=_list_state(obj))


def domain_block(*, domain: Domain, actor: Any, reason: str = "") -> None:
    _set_list_status(obj=domain, status=ListStatus.BLOCK, reason=reason, actor=actor, action="domain.block")
    domain.refresh_from_db(fields=["status", "status_reason"])


def domain_unblock(*, domain: Domain, actor: Any, reason: str = "") -> None:
    _set_list_status(obj=domain, status=ListStatus.UNKNOWN, reason=reason, actor=actor, action="domain.unblock")
    domain.refresh_from_db(fields=["status", "status_reason"])


def ip_block(*, ip: IpAddress, actor: Any, reason: str = "") -> None:
    _set_list_status(obj=ip, status=ListStatus.BLOCK, reason=reason, actor=actor, action="ip.block")
    ip.refresh_from_db(fields=["status", "status_reason"])


def ip_unblock(*, ip: IpAddress, actor: Any, reason: str = "") -> None:
    _set_list_status(obj=ip, status=ListStatus.UNKNOWN, reason=reason, actor=actor, action="ip.unblock")
    ip.refresh_from_db(fields=["status", "status_reason"])


def _author_state(author: Author) -> dict[str, Any]:
    return {
        "suspended_at": author.suspended_at.isoformat() if author.suspended_at else None,
        "suspended_reason": author.suspended_reason,
    }


@transaction.atomic
def author_suspend(*, author: Author, actor: Any, reason: str = "") -> None:
    locked = Author.objects.select_for_update().get(pk=author.pk)
    before = _author_state(locked)
    locked.suspended_at = locked.suspended_at or timezone.now()
    locked.suspended_reason = reason[:255]
    locked.save(update_fields=["suspended_at", "suspended_reason", "updated_at"])
    audit_record(actor=actor, action="author.suspend", target=locked, before=before, after=_author_state(locked))
    author.suspended_at, author.suspended_reason = locked.suspended_at, locked.suspended_reason


@transaction.atomic
def author_unsuspend(*, author: Author, actor: Any, reason: str = "") -> None:
    locked = Author.objects.select_for_update().get(pk=author.pk)
    before = _author_state(locked)
    locked.suspended_at = None
    locked.suspended_reason = ""
    locked.save(update_fields=["suspended_at", "suspended_reason", "updated_at"])
    after = {**_author_state(locked), "reason": reason[:255]}
    audit_record(actor=actor, action="author.unsuspend", target=locked, before=before, after=after)
    author.suspended_at, author.suspended_reason = None, ""
