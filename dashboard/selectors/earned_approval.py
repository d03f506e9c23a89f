"""The metrics page's earned-approval card: per active source, how far its models may approve on
their own (scoring.services.earned_approval) and what the next step still needs
(scoring.services.approval_levels). One aggregate query per source below level 1."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from moderation.models import Source
from scoring.models import DecisionPolicy
from scoring.services.abuse_policy import abuse_thresholds
from scoring.services.approval_levels import LevelEvidence, labels_to_open, level_evidence
from scoring.services.earned_approval import ApprovalGate, approval_gate


@dataclass(frozen=True)
class SourceApproval:
    source: str
    level: float
    gate: ApprovalGate
    next_step: LevelEvidence | None  # None: the full band is open
    to_open: int | None  # labels the next step still needs if none is removed; None: over the cap


def approval_overview(policy: DecisionPolicy, *, now: datetime) -> list[SourceApproval]:
    """Per active source, by name. Empty when earned approval is switched off."""
    if not settings.EARNED_APPROVAL:
        return []
    rows = []
    for source in Source.objects.filter(is_active=True).order_by("name"):
        gate = approval_gate(
            source.approval_level,
            approve_threshold=policy.approve_threshold,
            abuse_queue_threshold=abuse_thresholds(source).queue,
        )
        next_step = None
        if source.approval_level < 1.0:
            next_step = next(e for e in level_evidence(source, policy, now=now) if e.level > source.approval_level)
        rows.append(
            SourceApproval(
                source=source.name,
                level=source.approval_level,
                gate=gate,
                next_step=next_step,
                to_open=labels_to_open(next_step) if next_step is not None else 0,
            )
        )
    return rows
