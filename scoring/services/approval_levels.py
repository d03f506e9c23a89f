"""Moving a source's approval level (scoring.services.earned_approval): raised by its reviewed
posts, lowered by the spot checks of what its open steps approve.

The levels are steps of a quarter of the band between the gate at level 0 and the policy's. The
evidence for a step is the source's posts, received within EARNED_APPROVAL_WINDOW_DAYS, that the
gate held (a score whose routing reason says "approval not yet earned") in the slice of the band
the step adds (by that score's values: the step's gate would have approved it, the gate one step
lower would not) and that have ended: approved by a moderator, or removed by one or by a later
re-score (a report's), which count as removed. Posts queued for another reason (a report, an
unfamiliar text, a language, a campaign, an enforcement) would not be approved by opening the
slice, so they are not evidence. While a step is closed every post the gate holds waits for a
moderator, so the labels cover the slice's posts as they come, not a chosen few. A step is
earned when at least EARNED_APPROVAL_MIN_LABELS of its posts ended and the 95 % Wilson upper
bound of the share removed is at most EARNED_APPROVAL_MAX_SHARE (with none removed that takes 73
labels at 5 %, so at the defaults the share decides, not the minimum); the source moves to the
highest step such that every step from its current level up to it is earned. Each slice answers
for itself: posts just above the start, where most of a band's labels fall, do not vouch for
posts near the policy's threshold. The evidence needs the held scores: a source whose score
retention is shorter than the window has that much less of it.

Labels never lower a level: once a slice is approved its posts are no longer held, so it gathers
no new evidence of that kind, and a level that fell for want of labels would flood the queue.
What an open slice approves is sampled by the spot checks (scoring.services.spot_checks), and
their outcomes lower it (spot_check_evidence, lowered_level): when at least
EARNED_APPROVAL_MIN_CHECKS approvals drawn from an open step's slice since the level was last
set, placed by the score that approved them, have ended and show a removed share whose 95 %
Wilson lower bound is above EARNED_APPROVAL_MAX_SHARE (clear evidence the slice now lets through
more than it was opened for: new content, a new model, a campaign), the source drops to the step
below that slice, audited, and its evidence starts over as after an admin's change. A draw counts
once it has ended: approved by a moderator is a confirmation; removed by one, or by a later
re-score (a report's), is a violation let through. Violations end sooner than confirmations
(reports, appeals), so while draws wait the share leans high, which the minimum tempers; a
lowering it causes queues more, never publishes more. The approvals of authors a moderator
allow-listed are left out: the gate does not apply to them, so lowering it would not change what
they publish. With SPOT_CHECK_RATE at 0 nothing is drawn and no level falls. An admin may
set a level by hand in the Source admin (audited): a higher one skips ahead (an operator who
already trusts the models on this content); from then on only posts received after the change
count as evidence, so a level lowered after an incident stays down until new labels earn it. The
level is a share of the band, not a score: raising the policy's approve threshold or a
source's abuse queue threshold widens every slice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from django.conf import settings
from django.db.models import Count, OuterRef, Q, Subquery

from moderation.models import Post, PostStatus, Source
from moderation.selectors.spot_checks import RIGHT, WRONG, wilson_interval
from moderation.services.approval_levels import approval_level_lower, approval_level_raise
from scoring.models import Action, DecisionPolicy, Score
from scoring.services.abuse_policy import abuse_thresholds
from scoring.services.earned_approval import HELD_REASON, ApprovalGate, approval_gate

logger = logging.getLogger(__name__)

# What a held post can end as: approved or removed by a moderator, or removed automatically by a
# later re-score (a report's), which counts as removed.
DECIDED = (PostStatus.APPROVED, PostStatus.REMOVED, PostStatus.AUTO_REMOVED)

# What a drawn approval can end as: confirmed or removed by a moderator, or removed automatically
# by a later re-score (a report's), which counts as removed: the approvals reports proved bad.
CHECK_ENDED = (RIGHT[Action.APPROVE], WRONG[Action.APPROVE], PostStatus.AUTO_REMOVED)

# The levels a source can move to: a quarter of the band at a time, so a step's evidence is the
# posts of a slice a moderator team labels in days, not weeks.
LEVELS = (0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True)
class LevelEvidence:
    """The slice of the band one step adds, on one source: posts labelled in it, how many removed."""

    level: float
    labelled: int
    removed: int

    @property
    def upper_bound(self) -> float:
        return wilson_interval(self.removed, self.labelled)[1]

    @property
    def lower_bound(self) -> float:
        return wilson_interval(self.removed, self.labelled)[0]

    @property
    def disproved(self) -> bool:
        """An open step's spot checks: enough of them, and the removed share above what opened it
        beyond doubt."""
        return bool(
            self.labelled >= settings.EARNED_APPROVAL_MIN_CHECKS
            and self.lower_bound > settings.EARNED_APPROVAL_MAX_SHARE
        )

    @property
    def earned(self) -> bool:
        return bool(
            self.labelled >= settings.EARNED_APPROVAL_MIN_LABELS
            and self.upper_bound <= settings.EARNED_APPROVAL_MAX_SHARE
        )


def _approvable(gate: ApprovalGate) -> Q:
    """By the held score's values (level_evidence's annotations)."""
    return Q(held_final__lt=gate.final_below) & (Q(held_abuse__isnull=True) | Q(held_abuse__lt=gate.abuse_below))


def _gates(source: Source, policy: DecisionPolicy) -> list[ApprovalGate]:
    """The gate at level 0 and at each step of LEVELS."""
    queue = abuse_thresholds(source).queue
    return [
        approval_gate(level, approve_threshold=policy.approve_threshold, abuse_queue_threshold=queue)
        for level in (0.0, *LEVELS)
    ]


def _since(source: Source, now: datetime) -> datetime:
    """The window's start: EARNED_APPROVAL_WINDOW_DAYS back, or the level's last setting if later."""
    return max(
        [now - timedelta(days=settings.EARNED_APPROVAL_WINDOW_DAYS)]
        + ([source.approval_level_set_at] if source.approval_level_set_at else [])
    )


def level_evidence(source: Source, policy: DecisionPolicy, *, now: datetime) -> list[LevelEvidence]:
    """Per step of LEVELS, the labelled posts of the slice it adds (one query)."""
    gates = _gates(source, policy)
    slices = [_approvable(gates[i + 1]) & ~_approvable(gates[i]) for i in range(len(LEVELS))]
    # Each post by the score the gate held it with: a later re-score (a report's) moves its copy
    # on the post, most often upwards, and would take the likeliest violations out of the slice.
    held = Score.objects.filter(post=OuterRef("pk"), routing_reason__startswith=HELD_REASON).order_by("created_at")
    reviewed = (
        Post.objects.filter(
            source_id=source.id,
            status__in=DECIDED,
            received_at__gte=_since(source, now),
        )
        .annotate(
            held_final=Subquery(held.values("final_score")[:1]), held_abuse=Subquery(held.values("abuse_score")[:1])
        )
        .filter(held_final__isnull=False)
        .filter(_approvable(gates[-1]))
        .exclude(_approvable(gates[0]))
    )
    counts = reviewed.aggregate(
        **{f"n{i}": Count("id", filter=band) for i, band in enumerate(slices)},
        **{f"r{i}": Count("id", filter=band & ~Q(status=PostStatus.APPROVED)) for i, band in enumerate(slices)},
    )
    return [
        LevelEvidence(level=level, labelled=int(counts[f"n{i}"]), removed=int(counts[f"r{i}"]))
        for i, level in enumerate(LEVELS)
    ]


def spot_check_evidence(source: Source, policy: DecisionPolicy, *, now: datetime) -> list[LevelEvidence]:
    """Per open step of the source (LEVELS up to its level), the approvals drawn for a spot check
    from the slice it adds, placed by the score that approved them, whose check ended, and how
    many of those were removed since, by a moderator or a report's re-score (one query). Only
    draws since the level was last set count: the checks of a wider or narrower band say nothing
    about this one."""
    open_steps = [level for level in LEVELS if level <= source.approval_level]
    if not open_steps:
        return []
    gates = _gates(source, policy)
    slices = [_approvable(gates[i + 1]) & ~_approvable(gates[i]) for i in range(len(open_steps))]
    approving = Score.objects.filter(post=OuterRef("pk"), action=Action.APPROVE).order_by("created_at")
    allowlisted = Q(author__allowlisted_at__isnull=False) & (
        Q(author__allowlisted_until__isnull=True) | Q(author__allowlisted_until__gt=now)
    )
    checked = (
        Post.objects.filter(
            source_id=source.id,
            spot_check_action=Action.APPROVE,
            status__in=CHECK_ENDED,
            received_at__gte=_since(source, now),
        )
        .exclude(allowlisted)
        .annotate(
            held_final=Subquery(approving.values("final_score")[:1]),
            held_abuse=Subquery(approving.values("abuse_score")[:1]),
        )
        .filter(held_final__isnull=False)
    )
    counts = checked.aggregate(
        **{f"n{i}": Count("id", filter=band) for i, band in enumerate(slices)},
        **{f"r{i}": Count("id", filter=band & ~Q(status=RIGHT[Action.APPROVE])) for i, band in enumerate(slices)},
    )
    return [
        LevelEvidence(level=level, labelled=int(counts[f"n{i}"]), removed=int(counts[f"r{i}"]))
        for i, level in enumerate(open_steps)
    ]


def lowered_level(current: float, checks: list[LevelEvidence]) -> float:
    """The step below the lowest open slice whose spot checks disprove it; `current` if none does."""
    for i, step in enumerate(checks):  # the open steps, lowest first
        if step.disproved:
            return LEVELS[i - 1] if i > 0 else 0.0
    return float(current)


# labels_to_open stops counting here: a step that needs more is shown as "more than" this.
LABELS_TO_OPEN_CAP = 10_000


def labels_to_open(step: LevelEvidence) -> int | None:
    """How many more labels the step needs before it opens if none of them is removed (0: it is
    earned; None: more than LABELS_TO_OPEN_CAP). The fewest, so the dashboard can say "at least"."""
    low, high = 0, LABELS_TO_OPEN_CAP
    if not LevelEvidence(step.level, step.labelled + high, step.removed).earned:
        return None
    while low < high:  # the bound only falls as clean labels are added: bisect
        middle = (low + high) // 2
        if LevelEvidence(step.level, step.labelled + middle, step.removed).earned:
            high = middle
        else:
            low = middle + 1
    return low


def earned_level(current: float, evidence: list[LevelEvidence]) -> float:
    """The highest step such that every step from `current` up to it is earned; never below
    `current`. A step at or below it is not asked again: its slice is approved now and gathers no
    new evidence, so its labels ageing out of the window must not hold the next."""
    level = float(current)
    for step in evidence:
        if step.level <= current:
            continue
        if not step.earned:
            break
        level = step.level
    return level


@dataclass(frozen=True)
class SourceApproval:
    """Where one source stands: its level, what its models approve alone, and its next step."""

    level: float
    gate: ApprovalGate
    next_step: LevelEvidence | None  # None: the full band is open
    to_open: int | None  # labels the next step still needs if none is removed; None: over the cap


def source_approval(source: Source, policy: DecisionPolicy, *, now: datetime) -> SourceApproval:
    """One aggregate query below level 1, none at it."""
    gate = approval_gate(
        source.approval_level,
        approve_threshold=policy.approve_threshold,
        abuse_queue_threshold=abuse_thresholds(source).queue,
    )
    if source.approval_level >= 1.0:
        return SourceApproval(level=source.approval_level, gate=gate, next_step=None, to_open=0)
    next_step = next(e for e in level_evidence(source, policy, now=now) if e.level > source.approval_level)
    return SourceApproval(
        level=source.approval_level, gate=gate, next_step=next_step, to_open=labels_to_open(next_step)
    )


def _as_audit(evidence: list[LevelEvidence], *, bound: Literal["lower", "upper"]) -> list[dict[str, Any]]:
    """Each step's figures for the AuditLog row, with the bound that decided."""
    return [
        {
            "level": e.level,
            "labelled": e.labelled,
            "removed": e.removed,
            f"{bound}_bound": round(e.lower_bound if bound == "lower" else e.upper_bound, 4),
        }
        for e in evidence
    ]


def update_approval_levels(*, policy: DecisionPolicy, now: datetime, dry_run: bool = False) -> dict[int, float]:
    """Lower every active source whose open band the spot checks disprove (lowered_level), and
    raise every other one below level 1 to the level its reviewed posts earn; an AuditLog row per
    change. Returns source id -> new level for the sources that moved (`dry_run`: that would
    move, writing nothing)."""
    moved: dict[int, float] = {}
    for source in Source.objects.filter(is_active=True, approval_level__gt=0.0).order_by("id"):
        checks = spot_check_evidence(source, policy, now=now)
        level = lowered_level(source.approval_level, checks)
        if level >= source.approval_level:
            continue
        if not dry_run:
            if not approval_level_lower(source=source, level=level, evidence=_as_audit(checks, bound="lower")):
                continue
            logger.info(
                "scoring.approval_level source=%s %.2f -> %.2f (spot checks)", source.id, source.approval_level, level
            )
        moved[source.id] = level
    for source in Source.objects.filter(is_active=True, approval_level__lt=1.0).exclude(id__in=moved).order_by("id"):
        evidence = level_evidence(source, policy, now=now)
        level = earned_level(source.approval_level, evidence)
        if level <= source.approval_level:
            continue
        if not dry_run:
            if not approval_level_raise(source=source, level=level, evidence=_as_audit(evidence, bound="upper")):
                continue
            logger.info("scoring.approval_level source=%s %.2f -> %.2f", source.id, source.approval_level, level)
        moved[source.id] = level
    return moved
