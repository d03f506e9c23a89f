"""Enforcement from the dashboard: block/unblock a domain or an IP, suspend/unsuspend an
author. Each is one audited action with the before/after state. Domain and IP blocks from here
are global (every source's posts) and go through moderation.services.blocklists."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from moderation.models import Author, Domain, IpAddress
from moderation.services import blocklists
from moderation.services.audit import audit_record

LIST_STATUS_FIELDS = ["status", "status_reason", "status_changed_at"]


def list_block(*, target: Domain | IpAddress, actor: Any, reason: str = "") -> None:
    kind = blocklists.list_kind_of(target)
    blocklists.global_block(kind=kind.kind, value=getattr(target, kind.key), reason=reason[:255], actor=actor)
    target.refresh_from_db(fields=LIST_STATUS_FIELDS)


def list_unblock(*, target: Domain | IpAddress, actor: Any, reason: str = "") -> None:
    kind = blocklists.list_kind_of(target)
    blocklists.global_unblock(kind=kind.kind, value=getattr(target, kind.key), actor=actor)
    target.refresh_from_db(fields=LIST_STATUS_FIELDS)


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
