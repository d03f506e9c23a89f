"""Domain and IP block lists. Every change is audited through audit_record: actor None when it
came through the API (the source is recorded in the entry), the user when it came from the
dashboard.

Ownership: a block set through the API remembers its source (status_source). Through the API a
source may lift only its own blocks and never rewrites an existing block; moderators (no
source) may change or lift any block."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from moderation.errors import ApplicationError, NotFound
from moderation.models import Domain, IpAddress, ListStatus, Source
from moderation.services.audit import audit_record


class BlockedByOther(ApplicationError):
    code = "blocked_by_other"
    status_code = 403


def _check_may_lift(row: Domain | IpAddress, source: Source | None) -> None:
    if source is not None and row.status_source_id != source.pk:
        raise BlockedByOther("This entry was blocked by a moderator or another source; it cannot be lifted here.")


def _state(row: Domain | IpAddress) -> dict[str, Any]:
    # The name goes in the payload: target_id is the pk, a domain name may not fit that column.
    return {"name": str(row), "status": row.status, "reason": row.status_reason}


def _set_status(
    *, row: Domain | IpAddress, status: str, reason: str, action: str, actor: Any, source: Source | None
) -> bool:
    """Change the row's list status and audit it; False (and no audit entry) when unchanged."""
    if row.status == status and row.status_reason == reason:
        return False
    before = _state(row)
    row.status = status
    row.status_reason = reason
    row.status_changed_at = timezone.now()
    row.status_source = source if status == ListStatus.BLOCK else None
    row.save(update_fields=["status", "status_reason", "status_changed_at", "status_source"])
    after = _state(row)
    if source is not None:
        after["via"] = f"api:{source.slug}"
    audit_record(actor=actor, action=action, target=row, before=before, after=after)
    return True


@transaction.atomic
def domain_block(*, name: str, reason: str, actor: Any = None, source: Source | None = None) -> tuple[Domain, bool]:
    """Block a registrable domain (created if never seen). Returns (domain, newly_blocked)."""
    domain, _ = Domain.objects.get_or_create(name=name)
    domain = Domain.objects.select_for_update().get(pk=domain.pk)
    was_blocked = domain.status == ListStatus.BLOCK
    if not (was_blocked and source is not None):
        _set_status(
            row=domain, status=ListStatus.BLOCK, reason=reason, action="domain.block", actor=actor, source=source
        )
    return domain, not was_blocked


@transaction.atomic
def domain_unblock(*, name: str, actor: Any = None, source: Source | None = None) -> Domain:
    domain = Domain.objects.select_for_update().filter(name=name, status=ListStatus.BLOCK).first()
    if domain is None:
        raise NotFound("This domain is not on the block list.", code="not_blocked")
    _check_may_lift(domain, source)
    _set_status(row=domain, status=ListStatus.UNKNOWN, reason="", action="domain.unblock", actor=actor, source=source)
    return domain


@transaction.atomic
def ip_block(*, address: str, reason: str, actor: Any = None, source: Source | None = None) -> tuple[IpAddress, bool]:
    """Block an IP address (created if never seen). Returns (ip, newly_blocked)."""
    ip, _ = IpAddress.objects.get_or_create(address=address)
    ip = IpAddress.objects.select_for_update().get(pk=ip.pk)
    was_blocked = ip.status == ListStatus.BLOCK
    if not (was_blocked and source is not None):
        _set_status(row=ip, status=ListStatus.BLOCK, reason=reason, action="ip.block", actor=actor, source=source)
    return ip, not was_blocked


@transaction.atomic
def ip_unblock(*, address: str, actor: Any = None, source: Source | None = None) -> IpAddress:
    ip = IpAddress.objects.select_for_update().filter(address=address, status=ListStatus.BLOCK).first()
    if ip is None:
        raise NotFound("This address is not on the block list.", code="not_blocked")
    _check_may_lift(ip, source)
    _set_status(row=ip, status=ListStatus.UNKNOWN, reason="", action="ip.unblock", actor=actor, source=source)
    return ip
