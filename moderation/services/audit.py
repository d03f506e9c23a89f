"""The audit trail: one AuditLog row per moderator or admin action (who, what, when,
before/after). Other services call audit_record inside their own transaction."""

from __future__ import annotations

from typing import Any

from django.db import models

from moderation.models import AuditLog


def audit_record(
    *,
    actor: Any,
    action: str,
    target: models.Model | None = None,
    target_type: str = "",
    target_id: str | int = "",
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> AuditLog:
    if target is not None:
        target_type = target._meta.model_name or ""
        target_id = target.pk
    return AuditLog.objects.create(
        actor=actor if actor is not None and getattr(actor, "is_authenticated", False) else None,
        action=action,
        target_type=target_type,
        target_id=str(target_id),
        before=before or {},
        after=after or {},
    )
