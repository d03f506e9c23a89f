"""The Teach tab: the queued posts whose label would teach the models most, in the order of
dashboard.teach.teach_order (its docstring and docs/dashboard.md give the formula).

The normal queue is untouched: reported and urgent posts still come first there. The ranking
runs over a bounded pool of the filtered queue, so a page costs a fixed number of queries
however long the queue is: the TEACH_POOL posts whose final score lies closest to the policy's
boundary, and the TEACH_POOL most recent ones the policy queued as unfamiliar text (they may sit
anywhere on the score scale). The page shows the best PAGE_SIZE; deciding one brings up the next.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from django.db.models import Exists, F, OuterRef, Value
from django.db.models.functions import Abs, Coalesce

from dashboard.selectors.queue import (
    PAGE_SIZE,
    QUEUE_ROW_JOINS,
    QueueFilters,
    QueueRow,
    queue_queryset,
    queue_rows,
)
from dashboard.selectors.thresholds import Thresholds, live_thresholds
from dashboard.teach import Call, TeachItem, TeachPick, teach_order
from moderation.models import Post, PostStatus

TEACH_POOL = 1000
UNFAMILIAR_PREFIX = "unfamiliar text"  # scoring.services.policy.familiarity_routing_reason


@dataclass
class TeachPage:
    rows: list[QueueRow]
    picks: dict[int, TeachPick]  # post id -> why it is here
    filters: QueueFilters


def teach_filters(filters: QueueFilters) -> QueueFilters:
    """The queue's filters, on queued posts: the Teach tab asks for labels not yet given."""
    return replace(filters, status=PostStatus.QUEUED, view="", sort="priority")


def _boundary(thresholds: Thresholds) -> float:
    """The probability midway between the policy's thresholds in log-odds (dashboard.teach)."""

    def logit(p: float) -> float:
        p = min(max(p, 1e-4), 1 - 1e-4)
        return math.log(p / (1 - p))

    middle = (logit(thresholds.approve_threshold) + logit(thresholds.remove_threshold)) / 2
    return 1 / (1 + math.exp(-middle))


def teach_pool(*, filters: QueueFilters, thresholds: Thresholds, pool: int = TEACH_POOL) -> list[Post]:
    """The candidates: the posts closest to the boundary and the most recent unfamiliar ones, with
    what the order needs of them (3 queries; the second's Exists reads Score's (post, ...) unique
    index per queued post)."""
    from scoring.api import Score

    base = queue_queryset(filters=teach_filters(filters))
    distance = Abs(Coalesce(F("final_score"), Value(_boundary(thresholds))) - Value(_boundary(thresholds)))
    close = list(
        base.annotate(teach_distance=distance)
        .order_by("teach_distance", "received_at", "id")
        .values_list("pk", flat=True)[:pool]
    )
    routed = Score.objects.filter(post_id=OuterRef("pk"), routing_reason__startswith=UNFAMILIAR_PREFIX)
    unfamiliar = list(base.filter(Exists(routed)).order_by("-received_at", "-id").values_list("pk", flat=True)[:pool])
    ids = list(dict.fromkeys([*close, *unfamiliar]))
    posts = {
        p.pk: p
        for p in Post.objects.filter(pk__in=ids)
        .only(
            "pk",
            "final_score",
            "abuse_score",
            "author_id",
            "campaign_id",
            "content_hash",
            "source__abuse_queue_threshold",
            "source__abuse_remove_threshold",
        )
        .select_related("source")
    }
    return [posts[i] for i in ids if i in posts]


def _unfamiliarity(post_ids: list[int]) -> dict[int, float]:
    """post id -> the familiarity measure its latest score recorded (Score.features)."""
    from scoring.api import Score

    out: dict[int, float] = {}
    seen: set[int] = set()
    rows = (
        Score.objects.filter(post_id__in=post_ids).order_by("post_id", "-created_at", "-id").only("post_id", "features")
    )
    for score in rows.iterator(chunk_size=500):
        if score.post_id in seen:
            continue
        seen.add(score.post_id)
        value = (score.features or {}).get("unfamiliarity")
        if isinstance(value, int | float):
            out[score.post_id] = float(value)
    return out


def teach_items(posts: list[Post], *, thresholds: Thresholds, unfamiliarity: dict[int, float]) -> list[TeachItem]:
    from scoring.api import abuse_thresholds

    items = []
    for p in posts:
        calls = [Call(p.final_score, thresholds.approve_threshold, thresholds.remove_threshold)]
        if p.abuse_score is not None:
            abuse = abuse_thresholds(p.source)
            calls.append(Call(p.abuse_score, abuse.queue, abuse.remove))
        groups: list[Any] = []
        if p.campaign_id is not None:
            groups.append(("campaign", p.campaign_id))
        if p.content_hash:
            groups.append(("content", p.content_hash))
        items.append(
            TeachItem(
                post_id=p.pk,
                calls=tuple(calls),
                unfamiliarity=unfamiliarity.get(p.pk),
                author_id=p.author_id,
                groups=tuple(groups),
            )
        )
    return items


def teach_ranking(*, filters: QueueFilters, limit: int | None = None, pool: int = TEACH_POOL) -> list[TeachPick]:
    """The teach order over the pool: what the Teach tab shows, and what the learning-curve
    benchmark replays."""
    thresholds = live_thresholds()
    posts = teach_pool(filters=filters, thresholds=thresholds, pool=pool)
    items = teach_items(posts, thresholds=thresholds, unfamiliarity=_unfamiliarity([p.pk for p in posts]))
    return teach_order(items, limit=limit)


def teach_page(*, filters: QueueFilters, page_size: int = PAGE_SIZE) -> TeachPage:
    """The best page_size posts as the queue's rows (queue_rows), in teach order."""
    picks = teach_ranking(filters=filters, limit=page_size)
    ids = [pick.item.post_id for pick in picks]
    # The queue page's joins, so the rows render without a query each.
    loaded = Post.objects.filter(pk__in=ids).select_related(*QUEUE_ROW_JOINS)
    by_id = {p.pk: p for p in loaded.defer("preview_text", "preview_description", "journey")} if ids else {}
    rows = queue_rows([by_id[i] for i in ids if i in by_id])
    return TeachPage(rows=rows, picks={p.item.post_id: p for p in picks}, filters=filters)
