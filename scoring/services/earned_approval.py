"""Earned approval: a source's automatic approvals start narrow and widen as far as its own
reviewed posts show the models approve safely on its content.

On a platform's first day the models have seen none of its content, and a low score there is
weaker evidence than on the content they learned from (docs/design.md, "Earned approval"). So
a source starts at `approval_level` 0, where the models approve only the posts they are surest
of: a final score under EARNED_APPROVAL_START_FINAL and an abuse score under
EARNED_APPROVAL_START_ABUSE. A post the policy would approve beyond that is queued, and its
routing reason says so. Moderators label those posts as they work the queue, and
scoring.services.approval_levels raises the level as far as those labels show that few of the
posts a wider band would approve break the rules. At level 1 the policy's approve threshold and
the source's abuse queue threshold apply unchanged.

The gate only ever turns an approval into a queue: it never approves and never removes. An
author a moderator allow-listed is not gated (a person vouched for them; decide checks). A pure
function of its inputs, tested as a table.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from scoring.models import Action

# The routing reason of a post the gate queued; approval_levels finds its evidence by it.
HELD_REASON = "approval not yet earned"


@dataclass(frozen=True)
class ApprovalGate:
    """What a source's models may approve at its level: final below, and abuse below."""

    final_below: float
    abuse_below: float


def approval_gate(level: float, *, approve_threshold: float, abuse_queue_threshold: float) -> ApprovalGate:
    """The gate at `level` (0..1, clipped): each bound moves linearly from its start value to the
    policy's (a start value above the policy's never widens it)."""
    level = min(max(float(level), 0.0), 1.0)
    start_final = min(settings.EARNED_APPROVAL_START_FINAL, approve_threshold)
    start_abuse = min(settings.EARNED_APPROVAL_START_ABUSE, abuse_queue_threshold)
    return ApprovalGate(
        final_below=start_final + level * (approve_threshold - start_final),
        abuse_below=start_abuse + level * (abuse_queue_threshold - start_abuse),
    )


def earned_approval_decide(
    action: Action, final_score: float, abuse: float | None, gate: ApprovalGate
) -> tuple[Action, str]:
    """(the action, why the gate queued it or ""). Only an approval can change, to a queue.
    None (no abuse model served): the abuse bound does not apply."""
    if action != Action.APPROVE:
        return action, ""
    if final_score >= gate.final_below:
        return Action.QUEUE, f"{HELD_REASON}: score {final_score:.3f} >= {gate.final_below:.3f}"
    if abuse is not None and abuse >= gate.abuse_below:
        return Action.QUEUE, f"{HELD_REASON}: abuse {abuse:.3f} >= {gate.abuse_below:.3f}"
    return action, ""
