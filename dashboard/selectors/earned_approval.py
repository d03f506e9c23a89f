"""The metrics page's earned-approval card: per active source, how far its models may approve on
their own and what the next step still needs (scoring's source_approval: one aggregate query per
source below level 1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from moderation.models import Source
from scoring import api as scoring

if TYPE_CHECKING:
    from scoring.services.approval_levels import SourceApproval


def approval_overview() -> list[tuple[str, SourceApproval]]:
    """(source name, where it stands) per active source, by name; empty when switched off."""
    sources = list(Source.objects.filter(is_active=True).order_by("name"))
    approvals = scoring.source_approvals(sources)
    if approvals is None:
        return []
    return [(source.name, approval) for source, approval in zip(sources, approvals, strict=True)]
