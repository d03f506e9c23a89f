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


def approval_level_raise(*, source: Source, level: float, evidence: list[dict[str, Any]]) -> bool:
    """Raise `source` (as read) to `level`; False, and nothing written, when its level or the
    moment an admin last set it changed since it was read (a stale read never overwrites)."""
    with transaction.atomic():
        moved = Source.objects.filter(
            pk=source.pk, approval_level=source.approval_level, approval_level_set_at=source.approval_level_set_at
        ).update(approval_level=level)
        if not moved:
            return False
        audit_record(
            actor=None,
            action="source.approval_level_earned",
            target=source,
            before={"approval_level": source.approval_level},
            after={"approval_level": level, "evidence": evidence},
        )
    return True


def approval_level_lower(*, source: Source, level: float, evidence: list[dict[str, Any]]) -> bool:
    """Lower `source` (as read) to `level` on its spot checks' evidence, and start its evidence
    over from now, as an admin's change does (scoring.services.approval_levels); False, and
    nothing written, when its level or the moment it was last set changed since it was read."""
    with transaction.atomic():
        moved = Source.objects.filter(
            pk=source.pk, approval_level=source.approval_level, approval_level_set_at=source.approval_level_set_at
        ).update(approval_level=level, approval_level_set_at=timezone.now())
        if not moved:
            return False
        audit_record(
            actor=None,
            action="source.approval_level_lowered",
            target=source,
            before={"approval_level": source.approval_level},
            after={"approval_level": level, "spot_checks": evidence},
        )
    return True


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
