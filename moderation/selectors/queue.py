"""The review queue: posts by risk (final score desc, reports desc, age asc, id asc), with
filters and keyset pagination. For status=queued the order matches the partial index
post_queue_idx, so a page is an index range scan however deep the queue is."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet
from django.http import QueryDict
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from moderation.models import Post, PostStatus
from moderation.services.claims import claimable_q

QUEUE_ORDER = ("-final_score", "-report_count", "received_at", "id")
# Any other status (reviewing what was auto-removed, approved...) lists newest first, which
# post_status_received_idx (status, received_at) and the received_at index serve.
RECENT_ORDER = ("-received_at", "-id")


def risk_ordered(filters: QueueFilters) -> bool:
    return filters.status == PostStatus.QUEUED


PAGE_SIZE = 50
STATUS_CHOICES = [(s.value, s.label) for s in PostStatus] + [("all", "All statuses")]


@dataclass(frozen=True)
class Cursor:
    final_score: float | None
    report_count: int
    received_at: datetime
    id: int

    def encode(self) -> str:
        raw = json.dumps([self.final_score, self.report_count, self.received_at.isoformat(), self.id])
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, value: str) -> Cursor | None:
        try:
            raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
            score, reports, received, pk = json.loads(raw)
            received_at = parse_datetime(received)
            if received_at is None:
                return None
            return cls(None if score is None else float(score), int(reports), received_at, int(pk))
        except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
            return None

    @classmethod
    def after(cls, post: Post) -> Cursor:
        return cls(post.final_score, post.report_count, post.received_at, post.pk)


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except ValueError:
        return None


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
    date_from: date | None = None
    date_to: date | None = None
    q: str = ""
    errors: list[str] = field(default_factory=list)

    @classmethod
    def from_query(cls, params: QueryDict) -> QueueFilters:
        f = cls()
        status = params.get("status", PostStatus.QUEUED)
        f.status = status if status in dict(STATUS_CHOICES) else PostStatus.QUEUED
        f.score_min = _float(params.get("score_min"))
        f.score_max = _float(params.get("score_max"))
        f.has_reports = params.get("has_reports") in ("1", "on", "true")
        f.domain = params.get("domain", "").strip().lower()[:253]
        f.author = params.get("author", "").strip()[:255]
        f.ip = params.get("ip", "").strip()[:64]
        f.source = params.get("source", "").strip()[:60]
        f.model_version = params.get("model_version", "").strip()[:120]
        f.language = params.get("language", "").strip().lower()[:8]
        f.date_from = parse_date(params.get("date_from", "") or "") if params.get("date_from") else None
        f.date_to = parse_date(params.get("date_to", "") or "") if params.get("date_to") else None
        f.q = params.get("q", "").strip()[:200]
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
        for key in ("domain", "author", "ip", "source", "model_version", "language", "q"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out

    @property
    def active(self) -> bool:
        return bool(self.as_query())


def queue_queryset(*, filters: QueueFilters, user: Any = None, with_text: bool = True) -> QuerySet[Post]:
    """Filtered, ordered posts; `user` hides items claimed by other moderators."""
    qs = Post.objects.all()
    if filters.status != "all":
        qs = qs.filter(status=filters.status)
    if filters.score_min is not None:
        qs = qs.filter(final_score__gte=filters.score_min)
    if filters.score_max is not None:
        qs = qs.filter(final_score__lte=filters.score_max)
    if filters.has_reports:
        qs = qs.filter(report_count__gt=0)
    if filters.domain:
        qs = qs.filter(link__domain__name=filters.domain)
    if filters.author:
        qs = qs.filter(Q(author__username=filters.author) | Q(author__external_id=filters.author))
    if filters.ip:
        qs = qs.filter(ip__address=filters.ip)
    if filters.source:
        qs = qs.filter(source__slug=filters.source)
    if filters.model_version:
        qs = qs.filter(model_version=filters.model_version)
    if filters.language:
        qs = qs.filter(language=filters.language)
    tz = timezone.get_current_timezone()
    if filters.date_from:
        qs = qs.filter(received_at__gte=datetime.combine(filters.date_from, datetime.min.time(), tz))
    if filters.date_to:
        qs = qs.filter(received_at__lt=datetime.combine(filters.date_to, datetime.max.time(), tz))
    if filters.q and with_text:
        qs = qs.filter(text__icontains=filters.q)
    if user is not None:
        qs = qs.filter(claimable_q(user=user))
    return qs.order_by(*(QUEUE_ORDER if risk_ordered(filters) else RECENT_ORDER))


def _after_cursor_q(cursor: Cursor, *, risk: bool = True) -> Q:
    """Rows strictly after the cursor in QUEUE_ORDER (DESC sorts NULL scores first in PG),
    or in RECENT_ORDER when risk is False."""
    if not risk:
        return Q(received_at__lt=cursor.received_at) | Q(received_at=cursor.received_at, id__lt=cursor.id)
    rest = Q(report_count__lt=cursor.report_count) | Q(report_count=cursor.report_count) & (
        Q(received_at__gt=cursor.received_at) | Q(received_at=cursor.received_at, id__gt=cursor.id)
    )
    if cursor.final_score is None:
        return Q(final_score__isnull=False) | Q(final_score__isnull=True) & rest
    # The redundant lte bound lets PostgreSQL start the index scan at the cursor.
    return Q(final_score__lte=cursor.final_score) & (
        Q(final_score__lt=cursor.final_score) | Q(final_score=cursor.final_score) & rest
    )


@dataclass
class QueueRow:
    post: Post
    text_score: float | None = None
    link_score: float | None = None
    behaviour_score: float | None = None
    routing_reason: str = ""


@dataclass
class QueuePage:
    rows: list[QueueRow]
    next_cursor: str | None
    filters: QueueFilters


def _latest_scores(post_ids: list[int]) -> dict[int, Any]:
    from scoring.models import Score

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


TEXT_WINDOW = 5000


def _text_search_window(
    *, qs: QuerySet[Post], filters: QueueFilters, user: Any, cursor: Cursor | None, limit: int
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
    window = queue_queryset(filters=filters, user=user, with_text=False)
    if cursor is not None:
        window = window.filter(_after_cursor_q(cursor, risk=risk_ordered(filters)))
    columns = ("pk", "text", "final_score", "report_count", "received_at")
    window_sql, window_params = window.values(*columns)[:TEXT_WINDOW].query.sql_with_params()
    pattern = f"%{connection.ops.prep_for_like_query(filters.q)}%"
    order_sql = (
        "final_score DESC NULLS FIRST, report_count DESC, received_at, id"  # QUEUE_ORDER
        if risk_ordered(filters)
        else "received_at DESC, id DESC"  # RECENT_ORDER
    )
    # The text filter runs on the materialized window, so no plan can swap in a trigram scan.
    with connection.cursor() as cur:
        cur.execute(
            f"WITH w(id, text, final_score, report_count, received_at) AS MATERIALIZED ({window_sql}) "  # noqa: S608
            "SELECT id FROM w WHERE UPPER(text::text) LIKE UPPER(%s)"
            f" ORDER BY {order_sql} LIMIT %s",
            [*window_params, pattern, limit],
        )
        ids = [row[0] for row in cur.fetchall()]
    if len(ids) < limit:
        return None
    posts = list(qs.filter(pk__in=ids)[:limit])
    return posts if len(posts) == limit else None


def queue_page(
    *, filters: QueueFilters, user: Any = None, cursor: str | None = None, page_size: int = PAGE_SIZE
) -> QueuePage:
    """One page of the queue: 2 queries (posts with their author/link/domain, latest scores)."""
    qs = queue_queryset(filters=filters, user=user).select_related("author", "link__domain", "source")
    qs = qs.defer("preview_text", "preview_description", "journey")
    decoded = Cursor.decode(cursor) if cursor else None
    if decoded is not None:
        qs = qs.filter(_after_cursor_q(decoded, risk=risk_ordered(filters)))
    posts = _text_search_window(qs=qs, filters=filters, user=user, cursor=decoded, limit=page_size + 1)
    if posts is None:
        posts = list(qs[: page_size + 1])
    has_more = len(posts) > page_size
    posts = posts[:page_size]
    scores = _latest_scores([p.pk for p in posts])
    rows = []
    for p in posts:
        s = scores.get(p.pk)
        rows.append(
            QueueRow(
                post=p,
                text_score=s.text_score if s else None,
                link_score=s.link_score if s else None,
                behaviour_score=s.behaviour_score if s else None,
                routing_reason=s.routing_reason if s else "",
            )
        )
    next_cursor = Cursor.after(posts[-1]).encode() if has_more and posts else None
    return QueuePage(rows=rows, next_cursor=next_cursor, filters=filters)
