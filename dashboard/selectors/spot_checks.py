"""The Spot checks tab and what its labels say: the automatic decisions drawn for a moderator
to confirm (scoring.services.spot_checks), those still waiting, and per source the share of
the checked ones the models got wrong, with a 95 % interval.

A drawn post counts by where it stands now: approved automatically and since removed by a
moderator is a violation the models let through; removed automatically and since approved (on
review or appeal) is legitimate content they removed. A drawn post that a report sent back to
the queue counts in neither until someone decides it. The draw is uniform over the models' own
decisions, so these shares estimate the error of all of them, unlike the agreement on posts
moderators happened to review (reports, appeals)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count

from dashboard.selectors.queue import PAGE_SIZE, QUEUE_ROW_JOINS, QueueRow, queue_rows
from moderation.models import Post, PostStatus

# What a moderator's label turns a drawn post into, per automatic action.
WAITING = {"approve": PostStatus.AUTO_APPROVED, "remove": PostStatus.AUTO_REMOVED}
WRONG = {"approve": PostStatus.REMOVED, "remove": PostStatus.APPROVED}
RIGHT = {"approve": PostStatus.APPROVED, "remove": PostStatus.REMOVED}
Z_95 = 1.959963984540054


def wilson_interval(wrong: int, checked: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of wrong / checked ((0, 1) when nothing was checked).

    Written out rather than taken from scipy.stats (binomtest(...).proportion_ci(method=
    "wilson") gives the same numbers, tests/dashboard/test_spot_checks.py): importing scipy.stats
    would add tens of megabytes to every web process for five lines of arithmetic."""
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


@dataclass(frozen=True)
class SourceSpotChecks:
    source: str
    approve: SpotCheckShare
    remove: SpotCheckShare


def spot_check_figures(*, since: datetime) -> list[SourceSpotChecks]:
    """Per source (by name), the posts drawn since `since` by automatic action: checked,
    wrong, waiting. One grouped query over the drawn scores (score_spot_check_idx)."""
    from scoring.api import Score

    rows = (
        Score.objects.filter(spot_check=True, created_at__gte=since)
        .values("post__source__name", "action", "post__status")
        .annotate(n=Count("post_id", distinct=True))
        .order_by()
    )
    counts: dict[tuple[str, str], dict[str, int]] = {}
    for r in rows:
        action = r["action"]
        if action not in WAITING:
            continue
        tally = counts.setdefault((r["post__source__name"], action), {"checked": 0, "wrong": 0, "waiting": 0})
        status = r["post__status"]
        if status == WAITING[action]:
            tally["waiting"] += r["n"]
        elif status in (WRONG[action], RIGHT[action]):
            tally["checked"] += r["n"]
            tally["wrong"] += r["n"] if status == WRONG[action] else 0
    sources = sorted({source for source, _ in counts})
    empty = {"checked": 0, "wrong": 0, "waiting": 0}
    return [
        SourceSpotChecks(
            source=source,
            approve=SpotCheckShare(**counts.get((source, "approve"), empty)),
            remove=SpotCheckShare(**counts.get((source, "remove"), empty)),
        )
        for source in sources
    ]


def spot_check_waiting_count() -> int:
    """Drawn posts still as the models left them (the tab's count)."""
    from scoring.api import Score

    return (
        Score.objects.filter(spot_check=True, post__status__in=list(WAITING.values()))
        .values("post_id")
        .distinct()
        .count()
    )


def spot_check_rows(*, source_slug: str = "", limit: int = PAGE_SIZE) -> list[QueueRow]:
    """The oldest drawn posts still as the models left them, as the queue's rows (oldest
    first: an estimate is only as fresh as its oldest unlabelled draw)."""
    from scoring.api import Score

    drawn = Score.objects.filter(spot_check=True, post__status__in=list(WAITING.values()))
    if source_slug:
        drawn = drawn.filter(post__source__slug=source_slug)
    ids = list(dict.fromkeys(drawn.order_by("created_at", "id").values_list("post_id", flat=True)[: limit * 2]))
    ids = ids[:limit]
    posts = {p.pk: p for p in Post.objects.filter(pk__in=ids).select_related(*QUEUE_ROW_JOINS)}
    return queue_rows([posts[i] for i in ids if i in posts])
