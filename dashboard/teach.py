"""The teach order: which queued posts a moderator's label would teach the models most.

A pure function of the queue items (no database, no clock), so the order is tested
table-driven and the teach page, its tests and benchmarks/learning_curve.py rank alike.

Each item's value is

    value = uncertainty + UNFAMILIAR_WEIGHT * novelty

- uncertainty = exp(-|logit(score) - logit(boundary)| / half_width), where boundary is the
  midpoint, in log-odds, of the call's lower and upper thresholds (the policy's auto-approve and
  auto-remove for the final score; the source's queue and remove for the abuse score) and
  half_width is half the log-odds distance between them: 1 at the boundary, 1/e at either
  threshold, smaller the further a score lies outside the band. The closest of the item's calls
  counts; no score counts as 1 (nothing is known).
- novelty = min(unfamiliarity, NOVELTY_CAP) / NOVELTY_CAP, from the served familiarity measure
  (>= 1 is unfamiliar, modelops/text/familiarity.py); none measured counts as 0.

Then the order is built greedily, best first, with diminishing returns for more of the same:
an item's value is multiplied by GROUP_DECAY for each item of its campaign or near-duplicate
group already placed above it, and by AUTHOR_DECAY for each item of its author. Twenty copies of
one campaign therefore cost one slot near the top, not twenty, and a prolific author does not
crowd out the rest.

Balance: each item leans to one side, "violation" when any of its scores (calibrated
probabilities) is at least LEAN_AT, "legitimate" otherwise (no score: neither). Not the band's
boundary: a wide band (the abuse score's default queue and remove thresholds, 0.5 and 0.994)
puts its midpoint near 0.93, and posts the abuse model gives 0.8 would lean legitimate. An
item's value is also multiplied by BALANCE_DECAY for each item its side has placed beyond the
other side. Uncertainty alone asks mostly for one class when the models are torn about one kind
of post (measured on insults: 237 of 250 picks were violations), and a label set of one class
teaches the model that the platform's new kind of text is the violation and leaves the
legitimate posts of that kind unfamiliar and queued. Balancing by the models' own lean is
class-balanced uncertainty sampling: it needs no label, only the scores.

Nothing here looks at what the violation is: only scores, thresholds, the familiarity measure and
the groups.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

UNFAMILIAR_WEIGHT = 1.0
NOVELTY_CAP = 2.0
GROUP_DECAY = 0.1
AUTHOR_DECAY = 0.5
BALANCE_DECAY = 0.5
LEAN_AT = 0.5
# What the page calls "uncertain": a score within the threshold band's inner part (1/e at the
# thresholds, so about the middle two thirds of the band in log-odds).
UNCERTAIN_MIN = 0.5
_EPS = 1e-4


@dataclass(frozen=True)
class Call:
    """One score and the thresholds that decide it: below `approve` the policy approves (or does
    not queue), at or above `remove` it removes."""

    score: float | None
    approve: float
    remove: float


@dataclass(frozen=True)
class TeachItem:
    post_id: int
    # The spam call (final score, policy thresholds) and, where the post has one, the abuse call
    # (abuse score, its source's queue and remove thresholds): the closest call counts.
    calls: tuple[Call, ...]
    unfamiliarity: float | None = None
    author_id: Hashable | None = None
    # Campaign id and near-duplicate key (exact content hash): items sharing either are one group.
    groups: tuple[Hashable, ...] = ()


@dataclass(frozen=True)
class TeachPick:
    item: TeachItem
    value: float  # after the diminishing returns
    uncertainty: float
    novelty: float
    reasons: tuple[str, ...] = field(default_factory=tuple)
    leans_violation: bool | None = None


def _logit(p: float) -> float:
    p = min(max(p, _EPS), 1.0 - _EPS)
    return math.log(p / (1.0 - p))


def uncertainty(score: float | None, approve_threshold: float, remove_threshold: float) -> float:
    """1 at the midpoint of the band (log-odds), 1/e at its thresholds, towards 0 far outside."""
    if score is None:
        return 1.0
    low, high = _logit(approve_threshold), _logit(remove_threshold)
    half_width = max((high - low) / 2.0, _EPS)
    return math.exp(-abs(_logit(score) - (low + high) / 2.0) / half_width)


def novelty(unfamiliarity: float | None) -> float:
    if unfamiliarity is None or unfamiliarity <= 0:
        return 0.0
    return min(unfamiliarity, NOVELTY_CAP) / NOVELTY_CAP


def reasons_for(item: TeachItem, u: float) -> tuple[str, ...]:
    """Why the item is on the teach page, as its row says it."""
    out = []
    if u >= UNCERTAIN_MIN:
        out.append("uncertain")
    if item.unfamiliarity is not None and item.unfamiliarity >= NOVELTY_CAP:
        out.append("new kind")  # far past the familiarity limit: unlike what the model trained on
    elif item.unfamiliarity is not None and item.unfamiliarity >= 1.0:
        out.append("unfamiliar")
    return tuple(out)


def leans_violation(item: TeachItem) -> bool | None:
    """Whether the models lean to calling the item a violation: any score at least LEAN_AT.
    None when no call has a score."""
    scores = [c.score for c in item.calls if c.score is not None]
    if not scores:
        return None
    return any(score >= LEAN_AT for score in scores)


class _Placement:
    """What the order has placed so far, and what that does to an item's value: the group and
    author decays (per item) and the balance factor (per side)."""

    def __init__(self, items: Sequence[TeachItem], values: list[float]) -> None:
        self.items = items
        self.values = values
        self.groups: Counter[Hashable] = Counter()
        self.authors: Counter[Hashable] = Counter()
        self.sides: Counter[bool] = Counter()

    def discounted(self, index: int) -> float:
        item = self.items[index]
        repeats = max((self.groups[g] for g in item.groups), default=0)
        authored = self.authors[item.author_id] if item.author_id is not None else 0
        return self.values[index] * GROUP_DECAY**repeats * AUTHOR_DECAY**authored

    def side_factor(self, side: bool | None) -> float:
        if side is None:
            return 1.0
        return BALANCE_DECAY ** max(0, self.sides[side] - self.sides[not side])

    def place(self, index: int, side: bool | None) -> None:
        item = self.items[index]
        for g in set(item.groups):
            self.groups[g] += 1
        if item.author_id is not None:
            self.authors[item.author_id] += 1
        if side is not None:
            self.sides[side] += 1

    def best_of(self, heap: list[tuple[float, int]]) -> tuple[float, int] | None:
        """A side's best item and its current value. Within a side values only fall as items
        are placed, so a top whose value has not fallen since it was stored is the best left
        (lazy greedy)."""
        while heap:
            stored, index = heap[0]
            current = self.discounted(index)
            if current >= -stored - 1e-12:
                return current, index
            heapq.heapreplace(heap, (-current, index))
        return None


def teach_order(items: Sequence[TeachItem], *, limit: int | None = None) -> list[TeachPick]:
    """The items best first (at most `limit`); ties keep the input order."""
    base: list[tuple[float, float, float]] = []
    # One heap per side; the balance factor is the same for a whole side, so it is applied when
    # the sides' best are compared.
    heaps: dict[bool | None, list[tuple[float, int]]] = {True: [], False: [], None: []}
    for index, item in enumerate(items):
        u = max((uncertainty(c.score, c.approve, c.remove) for c in item.calls), default=1.0)
        n = novelty(item.unfamiliarity)
        base.append((u + UNFAMILIAR_WEIGHT * n, u, n))
        heaps[leans_violation(item)].append((-base[-1][0], index))
    for heap in heaps.values():
        heapq.heapify(heap)
    placement = _Placement(items, [b[0] for b in base])
    picks: list[TeachPick] = []
    want = len(items) if limit is None else min(limit, len(items))
    while len(picks) < want:
        tops = [
            (top[0] * placement.side_factor(side), -top[1], side)
            for side, heap in heaps.items()
            if (top := placement.best_of(heap))
        ]
        if not tops:
            break
        value, negative_index, side = max(tops, key=lambda t: (t[0], t[1]))
        index = -negative_index
        heapq.heappop(heaps[side])
        item = items[index]
        _, u, n = base[index]
        picks.append(
            TeachPick(
                item=item, value=value, uncertainty=u, novelty=n, reasons=reasons_for(item, u), leans_violation=side
            )
        )
        placement.place(index, side)
    return picks
