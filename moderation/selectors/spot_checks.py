"""What the spot checks say: per source, the share of the automatic decisions drawn for a check
(scoring.services.spot_checks; Post.spot_check_action) that the models got wrong, with a 95 %
interval. Read by the dashboard's metrics page and by the API (a platform's own source).

A drawn post counts by where it stands now: approved automatically and since removed by a
moderator is a violation the models let through; removed automatically and since approved (on
review or appeal) is legitimate content they removed. A drawn post whose status a report's
re-score has moved counts in neither until someone decides it.

The draw is uniform over the models' own first decisions, so once the window's draws are all
labelled the shares estimate the error of all of them. Before that they lean towards errors:
appeals and reports reach wrong decisions sooner than the Spot checks tab reaches right ones. So
each share comes with its coverage (labelled of drawn) and the range it can still move in."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count

from moderation.models import SPOT_CHECK_AWAITING, Post, PostStatus

# Per drawn action: the status while the check waits, and the moderator's status that says the
# models were wrong / right.
WRONG = {"approve": PostStatus.REMOVED, "remove": PostStatus.APPROVED}
RIGHT = {"approve": PostStatus.APPROVED, "remove": PostStatus.REMOVED}
Z_95 = 1.959963984540054


def wilson_interval(wrong: int, checked: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of wrong / checked ((0, 1) when nothing was checked).

    Written out rather than taken from scipy.stats (binomtest(...).proportion_ci(method=
    "wilson") gives the same numbers, tests/moderation/test_spot_check_figures.py): importing
    scipy.stats would add tens of megabytes to every web process for five lines of arithmetic."""
    if checked <= 0:
        return 0.0, 1.0
    p = wrong / checked
    denominator = 1 + z * z / checked
    centre = (p + z * z / (2 * checked)) / denominator
    half = z * math.sqrt(p * (1 - p) / checked + z * z / (4 * checked * checked)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class SpotCheckShare:
    """One source's checks of one automatic action ("approve" or "remove")."""

    checked: int  # decided by a moderator since the draw
    wrong: int  # violations approved, or legitimate posts removed
    waiting: int  # still as the models left them

    @property
    def share(self) -> float | None:
        return self.wrong / self.checked if self.checked else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.wrong, self.checked)

    @property
    def coverage(self) -> float | None:
        """Labelled of drawn: below 1 the share is provisional."""
        drawn = self.checked + self.waiting
        return self.checked / drawn if drawn else None

    @property
    def possible(self) -> tuple[float, float] | None:
        """Where the share ends once the waiting draws are labelled: all right, all wrong."""
        drawn = self.checked + self.waiting
        return (self.wrong / drawn, (self.wrong + self.waiting) / drawn) if drawn else None


@dataclass(frozen=True)
class SourceSpotChecks:
    source: str
    approve: SpotCheckShare
    remove: SpotCheckShare

    @property
    def waiting(self) -> int:
        return self.approve.waiting + self.remove.waiting

    @property
    def cells(self) -> tuple[tuple[SpotCheckShare, str], ...]:
        """The metrics card's two cells, with their data-metric names."""
        return ((self.approve, "spot-missed"), (self.remove, "spot-wrongly-removed"))


def spot_check_figures(*, since: datetime, source_id: int | None = None) -> list[SourceSpotChecks]:
    """Per source (by name), the posts received since `since` and drawn, by drawn action:
    checked, wrong, waiting; only `source_id`'s when given. One grouped query
    (post_spot_check_idx)."""
    drawn = Post.objects.filter(received_at__gte=since).exclude(spot_check_action="")
    if source_id is not None:
        drawn = drawn.filter(source_id=source_id)
    rows = drawn.values("source__name", "spot_check_action", "status").annotate(n=Count("id")).order_by()
    counts: dict[tuple[str, str], dict[str, int]] = {}
    for r in rows:
        action, status = r["spot_check_action"], r["status"]
        if action not in SPOT_CHECK_AWAITING:
            continue
        tally = counts.setdefault((r["source__name"], action), {"checked": 0, "wrong": 0, "waiting": 0})
        if status == SPOT_CHECK_AWAITING[action]:
            tally["waiting"] += r["n"]
        elif status in (WRONG[action], RIGHT[action]):
            tally["checked"] += r["n"]
            tally["wrong"] += r["n"] if status == WRONG[action] else 0
    empty = {"checked": 0, "wrong": 0, "waiting": 0}
    return [
        SourceSpotChecks(
            source=source,
            approve=SpotCheckShare(**counts.get((source, "approve"), empty)),
            remove=SpotCheckShare(**counts.get((source, "remove"), empty)),
        )
        for source in sorted({source for source, _ in counts})
    ]
