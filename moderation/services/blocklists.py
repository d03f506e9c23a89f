"""Domain and IP block lists, in two scopes.

- Global blocks (Domain/IpAddress.status) decide every source's posts. Only moderators set
  them, from the dashboard or the Django admin (`actor` is the user); never an API key.
- A source's blocks (SourceBlock) decide that source's own posts only and are visible to it
  only. A source sets them through the API.

Every change in either scope is audited through audit_record (a source's with actor None and
`via: api:<slug>` in the entry). A public suffix (`com`, `co.uk`) is never a block target: it
would decide every post under it. IP blocks are single addresses; ranges are refused."""

from __future__ import annotations

import ipaddress
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.errors import ApplicationError, NotFound
from core.urls import InvalidUrl, url_parts
from moderation.models import AuditLog, BlockKind, Domain, IpAddress, ListStatus, Source, SourceBlock
from moderation.services.audit import audit_record


class BlockRefused(ApplicationError):
    code = "block_refused"
    status_code = 400


def block_domain_value(raw: str) -> str:
    """The registrable domain a block of `raw` (a host or a URL) targets; raises BlockRefused
    for what is not a domain or is a public suffix (tldextract's bundled list, offline)."""
    try:
        parts = url_parts(raw)
    except InvalidUrl as exc:
        raise _refused("Enter a domain name or a URL.", code="invalid_domain", field="domain") from exc
    if not parts.is_ip and parts.suffix and parts.registrable_domain == parts.suffix:
        message = f"{parts.registrable_domain} is a public suffix; block a registrable domain under it."
        raise _refused(message, code="public_suffix", field="domain")
    return parts.registrable_domain


def block_ip_value(raw: str) -> str:
    """The canonical form of one IP address; raises BlockRefused for a range or anything else."""
    try:
        address = ipaddress.ip_address(raw.strip())
    except ValueError as exc:
        message = "Block single addresses; ranges are not supported." if "/" in raw else "Enter an IP address."
        raise _refused(message, code="invalid_ip", field="address") from exc
    return address.compressed


def _refused(message: str, *, code: str, field: str) -> BlockRefused:
    return BlockRefused(message, code=code, fields={field: [message]})


# --- a source's own blocks (the API) -----------------------------------------------------------


def _block_state(block: SourceBlock) -> dict[str, Any]:
    return {"kind": block.kind, "value": block.value, "reason": block.reason, "via": f"api:{block.source.slug}"}


def source_block_add(*, source: Source, kind: BlockKind, value: str, reason: str) -> tuple[SourceBlock, bool]:
    """Block `value` for `source`'s posts. Returns (block, created); an existing block is kept
    as it is (its reason too)."""
    value = block_domain_value(value) if kind == BlockKind.DOMAIN else block_ip_value(value)
    existing = SourceBlock.objects.filter(source=source, kind=kind, value=value).first()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            block = SourceBlock.objects.create(source=source, kind=kind, value=value, reason=reason[:255])
            audit_record(actor=None, action=f"{kind}.source_block", target=block, after=_block_state(block))
    except IntegrityError:  # a concurrent request of the same source created it first
        return SourceBlock.objects.get(source=source, kind=kind, value=value), False
    return block, True


@transaction.atomic
def source_block_remove(*, source: Source, kind: BlockKind, value: str) -> None:
    """Lift `source`'s block; NotFound when it has none (another source's blocks are invisible)."""
    try:
        value = block_domain_value(value) if kind == BlockKind.DOMAIN else block_ip_value(value)
    except BlockRefused:
        value = ""
    block = SourceBlock.objects.select_for_update().filter(source=source, kind=kind, value=value).first()
    if block is None:
        raise NotFound(f"This {BlockKind(kind).label.lower()} is not on your block list.", code="not_blocked")
    before, block_id = _block_state(block), block.pk
    block.delete()
    audit_record(
        actor=None, action=f"{kind}.source_unblock", target_type="sourceblock", target_id=block_id, before=before
    )


# --- global blocks (moderators) ------------------------------------------------------------------


def _state(row: Domain | IpAddress) -> dict[str, Any]:
    # The name goes in the payload: target_id is the pk, a domain name may not fit that column.
    return {
        "name": str(row),
        "status": row.status,
        "reason_code": row.status_reason_code,
        "reason": row.status_reason,
        "until": row.status_until.isoformat() if row.status_until else None,
    }


def list_status_set(
    *,
    row: Domain | IpAddress,
    status: str,
    reason: str,
    actor: Any,
    reason_code: str = "",
    until: datetime | None = None,
) -> AuditLog | None:
    """Set a row's global list status (with its reason and expiry) and audit it; the audit entry,
    or None when nothing changed. The caller holds the row (select_for_update) inside its
    transaction."""
    if (row.status, row.status_reason, row.status_reason_code, row.status_until) == (
        status,
        reason,
        reason_code,
        until,
    ):
        return None
    kind = "domain" if isinstance(row, Domain) else "ip"
    action = {ListStatus.BLOCK: "block", ListStatus.ALLOW: "allow"}.get(ListStatus(status), "unblock")
    before = _state(row)
    row.status = status
    row.status_reason = reason
    row.status_reason_code = reason_code
    row.status_until = until
    row.status_changed_at = timezone.now()
    row.save(update_fields=["status", "status_reason", "status_reason_code", "status_until", "status_changed_at"])
    return audit_record(actor=actor, action=f"{kind}.{action}", target=row, before=before, after=_state(row))


@transaction.atomic
def domain_block(*, name: str, reason: str, actor: Any) -> tuple[Domain, bool]:
    """Block a registrable domain for every source (created if never seen). Returns (domain,
    newly_blocked)."""
    name = block_domain_value(name)
    domain, _ = Domain.objects.get_or_create(name=name)
    domain = Domain.objects.select_for_update().get(pk=domain.pk)
    was_blocked = domain.status == ListStatus.BLOCK
    list_status_set(row=domain, status=ListStatus.BLOCK, reason=reason, actor=actor)
    return domain, not was_blocked


@transaction.atomic
def domain_unblock(*, name: str, actor: Any) -> Domain:
    domain = Domain.objects.select_for_update().filter(name=name, status=ListStatus.BLOCK).first()
    if domain is None:
        raise NotFound("This domain is not on the block list.", code="not_blocked")
    list_status_set(row=domain, status=ListStatus.UNKNOWN, reason="", actor=actor)
    return domain


@transaction.atomic
def ip_block(*, address: str, reason: str, actor: Any) -> tuple[IpAddress, bool]:
    """Block an IP address for every source (created if never seen). Returns (ip, newly_blocked)."""
    address = block_ip_value(address)
    ip, _ = IpAddress.objects.get_or_create(address=address)
    ip = IpAddress.objects.select_for_update().get(pk=ip.pk)
    was_blocked = ip.status == ListStatus.BLOCK
    list_status_set(row=ip, status=ListStatus.BLOCK, reason=reason, actor=actor)
    return ip, not was_blocked


@transaction.atomic
def ip_unblock(*, address: str, actor: Any) -> IpAddress:
    ip = IpAddress.objects.select_for_update().filter(address=address, status=ListStatus.BLOCK).first()
    if ip is None:
        raise NotFound("This address is not on the block list.", code="not_blocked")
    list_status_set(row=ip, status=ListStatus.UNKNOWN, reason="", actor=actor)
    return ip
