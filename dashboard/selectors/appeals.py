"""The appeals queue and the appeal figures (appeal rate, overturn rate) by moderator and for
automatic actions."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from moderation.models import Appeal, AppealStatus, Decision, Post, PostStatus

AUTOMATIC = "automatic"


def appeals_queue(*, status: str = AppealStatus.PENDING) -> QuerySet[Appeal]:
    """Oldest first: an appeal waits on a person."""
    return (
        Appeal.objects.filter(status=status)
        .select_related("post__author", "post__source", "post__link__domain", "decision__moderator", "resolved_by")
        .order_by("created_at", "pk")
    )


def appeal_status_counts() -> dict[str, int]:
    """status -> how many appeals, every status present (the tabs show a count each)."""
    counts = dict.fromkeys(AppealStatus.values, 0)
    for row in Appeal.objects.values("status").annotate(n=Count("id")).order_by():
        counts[row["status"]] = row["n"]
    return counts


@dataclass(frozen=True)
class AppealFigures:
    who: str  # a moderator's username, or AUTOMATIC
    decided: int  # decisions (or automatic actions) that could be appealed
    appealed: int
    resolved: int
    overturned: int

    @property
    def appeal_rate(self) -> float | None:
        return self.appealed / self.decided if self.decided else None

    @property
    def overturn_rate(self) -> float | None:
        return self.overturned / self.resolved if self.resolved else None


def appeal_figures() -> list[AppealFigures]:
    """One row per moderator whose decisions were appealed, then automatic actions. A fixed
    number of grouped queries whatever the volume."""
    by_moderator = (
        Appeal.objects.filter(decision__isnull=False)
        .values("decision__moderator__username")
        .annotate(
            appealed=Count("pk"),
            resolved=Count("pk", filter=~Q(status=AppealStatus.PENDING)),
            overturned=Count("pk", filter=Q(status=AppealStatus.OVERTURNED)),
        )
    )
    decided = dict(
        Decision.objects.filter(undone_at__isnull=True)
        .values_list("moderator__username")
        .annotate(n=Count("pk"))
        .values_list("moderator__username", "n")
    )
    rows = {
        r["decision__moderator__username"]: AppealFigures(
            r["decision__moderator__username"],
            decided.get(r["decision__moderator__username"], 0),
            r["appealed"],
            r["resolved"],
            r["overturned"],
        )
        for r in by_moderator
    }
    figures = sorted(rows.values(), key=lambda f: f.who)
    auto = Appeal.objects.filter(decision__isnull=True).aggregate(
        appealed=Count("pk"),
        resolved=Count("pk", filter=~Q(status=AppealStatus.PENDING)),
        overturned=Count("pk", filter=Q(status=AppealStatus.OVERTURNED)),
    )
    auto_statuses = (PostStatus.AUTO_REMOVED, PostStatus.AUTO_APPROVED)
    # Posts still under an automatic action, plus those whose automatic action an appeal overturned.
    overturned_posts = (
        Appeal.objects.filter(decision__isnull=True).exclude(post__status__in=auto_statuses).values("post").distinct()
    )
    auto_decided = Post.objects.filter(status__in=auto_statuses).count() + overturned_posts.count()
    figures.append(AppealFigures(AUTOMATIC, auto_decided, auto["appealed"], auto["resolved"], auto["overturned"]))
    return figures
