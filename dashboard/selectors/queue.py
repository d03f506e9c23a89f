"""The review queue with filters, a sort choice and keyset pagination. For status=queued each sort
matches an index, so a page is an index range scan however deep the queue is:

- priority (default): the stored Post.priority (harm + waited / SLA, moderation.services.priority),
  partial index post_priority_idx;
- score: final score desc, reports desc, age asc (post_queue_idx);
- age: oldest first (post_status_received_idx).

The Reported view lists posts with reports that no moderator has decided, heaviest reports
first (post_reported_idx). Other statuses list newest first."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Count, F, Q, QuerySet, Value
from django.db.models.functions import Coalesce
from django.http import QueryDict
from django.utils import timezone

from dashboard.selectors.keyset import Cursor, after_cursor_q
from dashboard.selectors.query_values import day_range_q, query_date, query_float, query_ip, query_text
from moderation.models import SPOT_CHECK_WAITING, Post, PostStatus, Report, SpecialistQueue
from moderation.services.assignment import servable_q
from moderation.services.claims import claimable_q
from moderation.services.decisions import DECIDED_STATUSES
from moderation.services.priority import PriorityParts, priority_parts, sla_seconds

SCORE_ORDER = ("-final_score", "-report_count", "received_at", "id")
PRIORITY_ORDER = ("-priority", "id")
AGE_ORDER = ("received_at", "id")
REPORTED_ORDER = ("-report_weight", "id")
# Any other status (reviewing what was auto-removed, approved...) lists newest first, which
# post_status_received_idx (status, received_at) and the received_at index serve.
RECENT_ORDER = ("-received_at", "-id")
SORTS = {"priority": PRIORITY_ORDER, "score": SCORE_ORDER, "age": AGE_ORDER}
SORT_CHOICES = [("priority", "Priority"), ("score", "Score"), ("age", "Oldest first")]
QUEUE_ORDER = PRIORITY_ORDER  # the default


def queue_order(filters: QueueFilters) -> tuple[str, ...]:
    if filters.view == "reported":
        return REPORTED_ORDER
    if filters.status == PostStatus.QUEUED:
        return SORTS.get(filters.sort, PRIORITY_ORDER)
    return RECENT_ORDER


PAGE_SIZE = 50
STATUS_CHOICES = [(s.value, s.label) for s in PostStatus] + [("all", "All statuses")]
CATEGORY_CHOICES = [("", "Any"), ("abuse", "Abuse"), ("spam", "Spam (not abuse)")]
# The Python type of each sort field that is not a float, for decoding cursors.
CURSOR_TYPES: dict[str, type] = {"received_at": datetime, "id": int, "report_count": int}
# Only final_score is nullable (DESC sorts NULL scores first in PostgreSQL).
NULLABLE_SORT_FIELDS = frozenset({"final_score"})


@dataclass
class QueueFilters:
    status: str = PostStatus.QUEUED
    score_min: float | None = None
    score_max: float | None = None
    has_reports: bool = False
    domain: str = ""
    author: str = ""
    ip: str = ""
    source: str = ""
    model_version: str = ""
    language: str = ""
    category: str = ""  # "" (any), "abuse" (abuse score at the source's queue threshold), "spam" (the rest)
    date_from: date | None = None
    date_to: date | None = None
    q: str = ""
    sort: str = "priority"
    view: str = ""  # "" (the queue) or "reported"
    # Ownership (moderation.services.assignment): "" (anyone's), "mine", "unassigned" or
    # "queue-<id>" (a specialist queue); "mine" reads `user_id`, the moderator looking.
    assigned: str = ""
    user_id: int | None = None
    errors: list[str] = field(default_factory=list)

    @classmethod
    def from_query(cls, params: QueryDict, *, user_id: int | None = None) -> QueueFilters:
        """The filters of a query string; a value that is not valid is left out and described
        in ``errors`` (dashboard.selectors.query_values)."""
        f = cls(user_id=user_id)
        errors = f.errors
        status = params.get("status", PostStatus.QUEUED)
        f.status = status if status in dict(STATUS_CHOICES) else PostStatus.QUEUED
        f.score_min = query_float(params, "score_min", errors)
        f.score_max = query_float(params, "score_max", errors)
        f.has_reports = params.get("has_reports") in ("1", "on", "true")
        f.domain = query_text(params, "domain", errors, max_length=253).lower()
        f.author = query_text(params, "author", errors, max_length=255)
        f.ip = query_ip(params, "ip", errors)
        f.source = query_text(params, "source", errors, max_length=60)
        f.model_version = query_text(params, "model_version", errors, max_length=120)
        f.date_from = query_date(params, "date_from", errors)
        f.date_to = query_date(params, "date_to", errors)
        f.language = query_text(params, "language", errors, max_length=8).lower()
        if f.language and f.language not in queue_languages():
            errors.append(f"language: {f.language!r} is not a language the detector assigns; pick one from the list.")
            f.language = ""
        category = params.get("category", "")
        f.category = category if category in dict(CATEGORY_CHOICES) else ""
        f.q = query_text(params, "q", errors, max_length=200)
        sort = params.get("sort", "priority")
        f.sort = sort if sort in SORTS else "priority"
        f.view = "reported" if params.get("view") == "reported" else ""
        assigned = query_text(params, "assigned", errors, max_length=40)
        if assigned and assigned not in dict(assignment_choices()):
            errors.append(f"assigned: {assigned!r} is not a view of the queue; pick one from the list.")
            assigned = ""
        f.assigned = assigned
        return f

    def as_query(self) -> dict[str, str]:
        """The non-default filters, for building links that keep them."""
        out: dict[str, str] = {}
        if self.status != PostStatus.QUEUED:
            out["status"] = self.status
        for key in ("score_min", "score_max", "date_from", "date_to"):
            value = getattr(self, key)
            if value is not None:
                out[key] = str(value)
        if self.has_reports:
            out["has_reports"] = "1"
        keys = ("domain", "author", "ip", "source", "model_version", "language", "category", "q", "view", "assigned")
        for key in keys:
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.sort != "priority":
            out["sort"] = self.sort
        return out

    @property
    def active(self) -> bool:
        return bool(self.as_query())


def queue_languages() -> tuple[str, ...]:
    """The codes a post's language can hold: the detector's candidates and "und" (not detected)."""
    return (*settings.LANGUAGE_CANDIDATES, "und")


def _by_category(qs: QuerySet[Post], category: str) -> QuerySet[Post]:
    """The posts of the category filter ("abuse" or not), else all of them. The abuse rule's
    queue threshold (scoring.services.abuse_policy) as SQL: the source's own value, else the
    setting."""
    if not category:
        return qs
    threshold = Coalesce(F("source__abuse_queue_threshold"), Value(float(settings.ABUSE_QUEUE_THRESHOLD)))
    abusive = Q(abuse_score__gte=threshold)
    return qs.filter(abusive) if category == "abuse" else qs.exclude(abusive)


def assignment_choices(queues: list[SpecialistQueue] | None = None) -> list[tuple[str, str]]:
    """The ownership views of the queue: anyone's, mine, unassigned, and one per specialist
    queue (`queues` when the caller has them loaded)."""
    if queues is None:
        queues = list(SpecialistQueue.objects.order_by("name"))
    return [
        ("", "Anyone's"),
        ("mine", "Mine"),
        ("unassigned", "Unassigned"),
        *((f"queue-{q.pk}", f"{q.name} queue") for q in queues),
    ]


def _by_assignment(qs: QuerySet[Post], filters: QueueFilters) -> QuerySet[Post]:
    """The posts of an ownership view; the order stays the view's (each has a partial index in
    priority order for queued posts: post_assignee_idx, post_assigned_queue_idx)."""
    if filters.assigned == "mine":
        return qs.filter(assigned_to_id=filters.user_id) if filters.user_id is not None else qs.none()
    if filters.assigned == "unassigned":
        return qs.filter(assigned_to__isnull=True, assigned_queue__isnull=True)
    if filters.assigned.startswith("queue-"):
        return qs.filter(assigned_queue_id=int(filters.assigned.removeprefix("queue-")))
    return qs


def queue_queryset(*, filters: QueueFilters, with_text: bool = True) -> QuerySet[Post]:
    """Filtered, ordered posts, claimed ones included: the queue marks a colleague's claim
    instead of hiding it, and focus mode passes over it (claims.claim_next)."""
    qs = Post.objects.all()
    if filters.view == "reported":
        # Reported and not yet decided by a moderator, whatever the models made of it.
        qs = qs.filter(report_count__gt=0).exclude(status__in=DECIDED_STATUSES)
    elif filters.status != "all":
        qs = qs.filter(status=filters.status)
    if filters.score_min is not None:
        qs = qs.filter(final_score__gte=filters.score_min)
    if filters.score_max is not None:
        qs = qs.filter(final_score__lte=filters.score_max)
    if filters.has_reports:
        qs = qs.filter(report_count__gt=0)
    if filters.author:
        qs = qs.filter(Q(author__username=filters.author) | Q(author__external_id=filters.author))
    exact = {
        "link__domain__name": filters.domain,
        "ip__address": filters.ip,
        "source__slug": filters.source,
        "model_version": filters.model_version,
        "language": filters.language,
    }
    qs = qs.filter(**{column: value for column, value in exact.items() if value})
    qs = _by_category(qs, filters.category)
    qs = _by_assignment(qs, filters)
    qs = qs.filter(day_range_q("received_at", filters.date_from, filters.date_to))
    if filters.q and with_text:
        qs = qs.filter(text__icontains=filters.q)
    return qs.order_by(*queue_order(filters))


def queue_next_post(*, after_post_id: int, user: Any) -> Post | None:
    """The post to open after deciding one outside focus mode: the top of the default queue,
    other than that post, not held or owned by a colleague. Nothing is claimed."""
    return (
        queue_queryset(filters=QueueFilters())
        .exclude(pk=after_post_id)
        .filter(claimable_q(user=user), servable_q(user=user))
        .only("pk")
        .first()
    )


def queue_tab_counts() -> dict[str, int]:
    """How many posts each queue tab holds, unfiltered: waiting for review, reported and not
    decided by a moderator yet (the Reported view), and drawn for a spot check and not yet
    checked (post_spot_check_waiting_idx: only those posts are in it)."""
    return {
        "queue": Post.objects.filter(status=PostStatus.QUEUED).count(),
        "reported": queue_queryset(filters=QueueFilters(view="reported")).order_by().count(),
        "spot_checks": Post.objects.filter(SPOT_CHECK_WAITING).count(),
    }


@dataclass
class QueueRow:
    post: Post
    text_score: float | None = None
    link_score: float | None = None
    behaviour_score: float | None = None
    routing_reason: str = ""
    report_reasons: list[tuple[str, int]] = field(default_factory=list)
    due_at: datetime | None = None  # received_at + SLA, for a pending post
    priority: PriorityParts | None = None  # harm + waited / SLA as its reasons, for a queued post

    @property
    def sla_breached(self) -> bool:
        return self.due_at is not None and self.due_at <= timezone.now()

    @property
    def sla_seconds_left(self) -> float | None:
        return None if self.due_at is None else (self.due_at - timezone.now()).total_seconds()


@dataclass
class QueuePage:
    rows: list[QueueRow]
    next_cursor: str | None
    filters: QueueFilters


def _latest_scores(post_ids: list[int]) -> dict[int, Any]:
    from scoring.api import Score

    if not post_ids:
        return {}
    # A post has one score per model set and revision, so this stays a handful of rows per
    # post; the first per post in this order is its latest.
    scores = (
        Score.objects.filter(post_id__in=post_ids)
        .order_by("post_id", "-created_at", "-id")
        .only("post_id", "text_score", "link_score", "behaviour_score", "routing_reason")
    )
    latest: dict[int, Any] = {}
    for score in scores:
        latest.setdefault(score.post_id, score)
    return latest


def _report_reasons(post_ids: list[int]) -> dict[int, list[tuple[str, int]]]:
    """post id -> [(reason, count)], most frequent first; skipped when no row has reports."""
    if not post_ids:
        return {}
    out: dict[int, list[tuple[str, int]]] = {}
    rows = Report.objects.filter(post_id__in=post_ids).values("post_id", "reason").annotate(n=Count("id"))
    for r in rows.order_by("post_id", "-n", "reason"):
        out.setdefault(r["post_id"], []).append((r["reason"], r["n"]))
    return out


TEXT_WINDOW = 5000


def _text_search_window(
    *, qs: QuerySet[Post], filters: QueueFilters, cursor: Cursor | None, limit: int
) -> list[Post] | None:
    """Text search, first within the next TEXT_WINDOW rows of the queue order.

    A common term fills a page within the first rows of the index scan; the trigram index
    (post_text_trgm_idx) serves rare terms, but the planner cannot tell the two apart and
    picks the trigram bitmap for both, which for a common term means sorting tens of
    thousands of matches. So: scan a bounded window in index order first; when it holds a
    full page, that page is exact (every earlier row was examined). Otherwise the caller
    runs the trigram query."""
    if not filters.q or connection.vendor != "postgresql":
        return None
    window = queue_queryset(filters=filters, with_text=False)
    if cursor is not None:
        window = window.filter(after_cursor_q(cursor, nullable=NULLABLE_SORT_FIELDS))
    columns = ("pk", "text", "final_score", "report_count", "received_at", "priority", "report_weight")
    window_sql, window_params = window.values(*columns)[:TEXT_WINDOW].query.sql_with_params()
    pattern = f"%{connection.ops.prep_for_like_query(filters.q)}%"
    # The same order as queue_order, in SQL over the window's columns (DESC puts NULL first).
    order_sql = ", ".join(f"{f.lstrip('-')} DESC NULLS FIRST" if f.startswith("-") else f for f in queue_order(filters))
    # The text filter runs on the materialized window, so no plan can swap in a trigram scan.
    with connection.cursor() as cur:
        cur.execute(
            f"WITH w(id, text, final_score, report_count, received_at, priority, report_weight) AS MATERIALIZED ({window_sql}) "  # noqa: S608, E501
            "SELECT id FROM w WHERE UPPER(text::text) LIKE UPPER(%s)"
            f" ORDER BY {order_sql} LIMIT %s",
            [*window_params, pattern, limit],
        )
        ids = [row[0] for row in cur.fetchall()]
    if len(ids) < limit:
        return None
    posts = list(qs.filter(pk__in=ids)[:limit])
    return posts if len(posts) == limit else None


# What a queue row shows besides the post: loaded with it, so no row costs a query.
QUEUE_ROW_JOINS = ("author", "link__domain", "source", "claimed_by", "campaign", "assigned_to", "assigned_queue")


def queue_rows(posts: list[Post]) -> list[QueueRow]:
    """The rows of these posts (loaded with queue_page's select_related): 2 queries, latest
    scores and report reasons. The queue and the Teach tab show the same rows."""
    scores = _latest_scores([p.pk for p in posts])
    reasons = _report_reasons([p.pk for p in posts if p.report_count])
    sla = timedelta(seconds=sla_seconds())
    now = timezone.now()
    rows = []
    for p in posts:
        s = scores.get(p.pk)
        pending = p.status in (PostStatus.QUEUED, PostStatus.RECEIVED)
        rows.append(
            QueueRow(
                post=p,
                text_score=s.text_score if s else None,
                link_score=s.link_score if s else None,
                behaviour_score=s.behaviour_score if s else None,
                report_reasons=reasons.get(p.pk, []),
                due_at=p.received_at + sla if pending else None,
                priority=priority_parts(
                    final_score=p.final_score,
                    report_count=p.report_count,
                    report_weight=p.report_weight,
                    received_at=p.received_at,
                    now=now,
                )
                if p.status == PostStatus.QUEUED
                else None,
                routing_reason=s.routing_reason if s else "",
            )
        )
    return rows


def queue_page(*, filters: QueueFilters, cursor: str | None = None, page_size: int = PAGE_SIZE) -> QueuePage:
    """One page of the queue: 3 queries (posts with their author/link/domain/claimer/campaign,
    latest scores, report reasons)."""
    order = queue_order(filters)
    qs = queue_queryset(filters=filters).select_related(*QUEUE_ROW_JOINS)
    qs = qs.defer("preview_text", "preview_description", "journey")
    decoded = Cursor.decode(cursor, order=order, types=CURSOR_TYPES) if cursor else None
    if decoded is not None:
        qs = qs.filter(after_cursor_q(decoded, nullable=NULLABLE_SORT_FIELDS))
    posts = _text_search_window(qs=qs, filters=filters, cursor=decoded, limit=page_size + 1)
    if posts is None:
        posts = list(qs[: page_size + 1])
    has_more = len(posts) > page_size
    posts = posts[:page_size]
    rows = queue_rows(posts)
    next_cursor = Cursor.after(posts[-1], order=order).encode() if has_more and posts else None
    return QueuePage(rows=rows, next_cursor=next_cursor, filters=filters)
