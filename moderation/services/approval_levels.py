"""Writing a source's approval level (scoring.services.earned_approval): the one place that
changes `Source.approval_level`, each change with its AuditLog row in one transaction. Scoring
raises it from its evidence and lowers it on its spot checks (scoring.services.approval_levels);
an admin sets it by hand."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from moderation.models import Source
from moderation.services.audit import audit_record


def _move_from_read(*, source: Source, level: float, action: str, after: dict[str, Any], restart: bool) -> bool:
    """Move `source` (as read) to `level` with its AuditLog row, in one transaction; False, and
    nothing written, when its level or the moment it was last set changed since it was read (a
    stale read never overwrites). `restart`: the evidence starts over from now."""
    changes: dict[str, Any] = {"approval_level": level}
    if restart:
        changes["approval_level_set_at"] = timezone.now()
    with transaction.atomic():
        moved = Source.objects.filter(
            pk=source.pk, approval_level=source.approval_level, approval_level_set_at=source.approval_level_set_at
        ).update(**changes)
        if not moved:
            return False
        audit_record(
            actor=None,
            action=action,
            target=source,
            before={"approval_level": source.approval_level},
            after={"approval_level": level, **after},
        )
    return True


def approval_level_raise(*, source: Source, level: float, evidence: list[dict[str, Any]]) -> bool:
    """Raise `source` (as read) to `level` on its labels' evidence (_move_from_read)."""
    return _move_from_read(
        source=source, level=level, action="source.approval_level_earned", after={"evidence": evidence}, restart=False
    )


def approval_level_lower(*, source: Source, level: float, evidence: list[dict[str, Any]]) -> bool:
    """Lower `source` (as read) to `level` on its spot checks' evidence, and start its evidence
    over from now, as an admin's change does (scoring.services.approval_levels; _move_from_read)."""
    return _move_from_read(
        source=source,
        level=level,
        action="source.approval_level_lowered",
        after={"spot_checks": evidence},
        restart=True,
    )


def approval_level_set(*, source: Source, level: float, actor: Any) -> None:
    """An admin's level for `source`: from now on only posts received after it count as evidence
    for raising it (scoring.services.approval_levels), so a level lowered after an incident stays
    down until new labels earn it."""
    with transaction.atomic():
        before = Source.objects.select_for_update().values_list("approval_level", flat=True).get(pk=source.pk)
        source.approval_level, source.approval_level_set_at = level, timezone.now()
        source.save(update_fields=["approval_level", "approval_level_set_at"])
        audit_record(
            actor=actor,
            action="source.approval_level_set",
            target=source,
            before={"approval_level": before},
            after={"approval_level": level},
        )
