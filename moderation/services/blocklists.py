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
from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True)
class ListKind:
    """What differs between the domain and the IP block lists; every service, serializer,
    filter and view is written once over it."""

    kind: BlockKind
    model: type[Domain] | type[IpAddress]
    key: str  # the row's unique value column, and the API's name for the value
    canonical: Callable[[str], str]
    noun: str  # in messages: "This domain is not on the block list."


LIST_KINDS: dict[BlockKind, ListKind] = {
    BlockKind.DOMAIN: ListKind(BlockKind.DOMAIN, Domain, "name", block_domain_value, "domain"),
    BlockKind.IP: ListKind(BlockKind.IP, IpAddress, "address", block_ip_value, "address"),
}


def list_kind_of(row: Domain | IpAddress) -> ListKind:
    return LIST_KINDS[BlockKind.DOMAIN if isinstance(row, Domain) else BlockKind.IP]


# --- a source's own blocks (the API) -----------------------------------------------------------


def _block_state(block: SourceBlock) -> dict[str, Any]:
    return {"kind": block.kind, "value": block.value, "reason": block.reason, "via": f"api:{block.source.slug}"}


def source_block_add(*, source: Source, kind: BlockKind, value: str, reason: str) -> tuple[SourceBlock, bool]:
    """Block `value` for `source`'s posts. Returns (block, created); an existing block is kept
    as it is (its reason too)."""
    value = LIST_KINDS[kind].canonical(value)
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
        value = LIST_KINDS[kind].canonical(value)
    except BlockRefused:
        value = ""
    block = SourceBlock.objects.select_for_update().filter(source=source, kind=kind, value=value).first()
    if block is None:
        raise NotFound(f"This {LIST_KINDS[kind].noun} is not on your block list.", code="not_blocked")
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
    action = {ListStatus.BLOCK: "block", ListStatus.ALLOW: "allow"}.get(ListStatus(status), "unblock")
    before = _state(row)
    row.status = status
    row.status_reason = reason
    row.status_reason_code = reason_code
    row.status_until = until
    row.status_changed_at = timezone.now()
    row.save(update_fields=["status", "status_reason", "status_reason_code", "status_until", "status_changed_at"])
    return audit_record(
        actor=actor, action=f"{list_kind_of(row).kind}.{action}", target=row, before=before, after=_state(row)
    )


@transaction.atomic
def global_block(*, kind: BlockKind, value: str, reason: str, actor: Any) -> tuple[Domain | IpAddress, bool]:
    """Block a registrable domain or an IP address for every source (the row is created if
    never seen). Returns (row, newly_blocked)."""
    spec = LIST_KINDS[kind]
    lookup: dict[str, Any] = {spec.key: spec.canonical(value)}
    row, _ = spec.model.objects.get_or_create(**lookup)
    row = spec.model.objects.select_for_update().get(pk=row.pk)
    was_blocked = row.status == ListStatus.BLOCK
    list_status_set(row=row, status=ListStatus.BLOCK, reason=reason, actor=actor)
    return row, not was_blocked


@transaction.atomic
def global_unblock(*, kind: BlockKind, value: str, actor: Any) -> Domain | IpAddress:
    spec = LIST_KINDS[kind]
    row = spec.model.objects.select_for_update().filter(**{spec.key: value}, status=ListStatus.BLOCK).first()
    if row is None:
        raise NotFound(f"This {spec.noun} is not on the block list.", code="not_blocked")
    list_status_set(row=row, status=ListStatus.UNKNOWN, reason="", actor=actor)
    return row
