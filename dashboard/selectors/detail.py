"""Everything the post detail page shows as evidence, in a bounded number of queries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import Count, Q

from core.errors import NotFound
from moderation.models import PENDING_STATUSES, Decision, Post, PostStatus, ReasonCode, Report, ReporterRecord

RELATED_LIMIT = 10
TOP_CONTRIBUTIONS = 8
# Sub-models whose contributions are shown, in this order (the final decision first, then the
# angles it fuses); others follow alphabetically. The keys are the Triton model names that
# scoring.triton_client stores in Score.contributions.
MODEL_ORDER = ("fusion_model", "link_model", "behaviour_model")
REJECT_STATUSES = (PostStatus.REMOVED, PostStatus.AUTO_REMOVED)


@dataclass
class Contribution:
    feature: str
    value: float  # the contribution, in the model's log-odds
    width: float  # percent of the largest magnitude in its model, for the bar
    feature_value: float | None = None  # the feature's own value when the post was scored


@dataclass
class ModelContributions:
    model: str
    items: list[Contribution]


@dataclass
class AuthorStats:
    total: int = 0
    removed: int = 0
    approved: int = 0
    pending: int = 0

    @property
    def reject_rate(self) -> float | None:
        decided = self.removed + self.approved
        return self.removed / decided if decided else None


@dataclass
class PostDetail:
    post: Post
    score: Any | None
    score_history: list[Any]
    contributions: list[ModelContributions]
    reports: list[Report]
    decisions: list[Decision]
    author_posts: list[Post]
    author_stats: AuthorStats
    same_ip: list[Post]
    same_domain: list[Post]
    cluster_counts: dict[str, int]
    # feature -> value when scored (evidence_values): contributions and panels read this.
    scored_values: dict[str, float] = field(default_factory=dict)
    reason_codes: list[ReasonCode] = field(default_factory=list)
    # reporter id -> (upheld, rejected): the track record behind each report's weight.
    reporter_records: dict[str, tuple[int, int]] = field(default_factory=dict)


# The fusion model's inputs are the sub-models' scores, kept in the Score's own columns.
FUSION_INPUTS = {
    "text_prob": "text_score",
    "preview_prob": "preview_score",
    "link_prob": "link_score",
    "behaviour_prob": "behaviour_score",
}


def evidence_values(score: Any | None) -> dict[str, float]:
    """Feature -> its value when the post was scored, from the Score row alone.

    The one source for every "what the model saw" figure on the post page: the value beside
    each contribution and the "when scored" counters of the author, link and IP panels. The
    live counters (spam decided since) can differ, and the page labels them "now"; mixing the
    two made a spam rate of 0 at scoring time look like a contradiction of 3 spam posts today."""
    if score is None:
        return {}
    values: dict[str, float] = {}
    stored = score.features if isinstance(score.features, dict) else {}
    for group in ("link", "behaviour"):
        for name, value in (stored.get(group) or {}).items():
            try:
                values[str(name)] = float(value)
            except (TypeError, ValueError):
                continue
    for name, column in FUSION_INPUTS.items():
        value = getattr(score, column, None)
        if value is not None:
            values[name] = float(value)
    return values


def contributions_top(
    contributions: dict[str, Any], *, values: dict[str, float] | None = None, limit: int = TOP_CONTRIBUTIONS
) -> list[ModelContributions]:
    """Per model, the features with the largest |contribution| (the bias term left out), each
    with its value from `values` (evidence_values)."""
    values = values or {}
    out: list[ModelContributions] = []
    models = sorted(contributions or {}, key=lambda m: (MODEL_ORDER.index(m) if m in MODEL_ORDER else 99, m))
    for model in models:
        features = contributions.get(model) or {}
        if not isinstance(features, dict):
            continue
        pairs: list[tuple[str, float]] = []
        for name, value in features.items():
            if name.lower() in ("bias", "_bias", "base_value"):
                continue
            try:
                pairs.append((str(name), float(value)))
            except (TypeError, ValueError):
                continue
        pairs.sort(key=lambda kv: abs(kv[1]), reverse=True)
        pairs = pairs[:limit]
        peak = max((abs(v) for _, v in pairs), default=0.0) or 1.0
        out.append(
            ModelContributions(
                model=model,
                items=[
                    Contribution(feature=n, value=v, width=round(abs(v) / peak * 100, 1), feature_value=values.get(n))
                    for n, v in pairs
                ],
            )
        )
    return out


def cluster_counts(*, author_id: int, domain_id: int | None, ip_id: int | None) -> dict[str, int]:
    """Pending posts by the author / with the domain / from the IP, in one round trip.

    Three scalar subqueries, each on its own index (post_author_idx, link -> post_link_idx,
    post_ip_idx); one COUNT with OR-ed filters would scan the whole table."""
    pending = [str(s) for s in PENDING_STATUSES]
    if connection.vendor != "postgresql":  # the laptop default (SQLite): three plain counts
        base = Post.objects.filter(status__in=pending)
        return {
            "author": base.filter(author_id=author_id).count(),
            "domain": base.filter(link__domain_id=domain_id).count() if domain_id else 0,
            "ip": base.filter(ip_id=ip_id).count() if ip_id else 0,
        }
    with connection.cursor() as cur:
        cur.execute(
            "SELECT"
            " (SELECT count(*) FROM moderation_post WHERE author_id = %s AND status = ANY(%s)),"
            " (SELECT count(*) FROM moderation_post p JOIN moderation_link l ON l.id = p.link_id"
            "   WHERE l.domain_id = %s AND p.status = ANY(%s)),"
            " (SELECT count(*) FROM moderation_post WHERE ip_id = %s AND status = ANY(%s))",
            [author_id, pending, domain_id, pending, ip_id, pending],
        )
        author, domain, ip = cur.fetchone()
    return {"author": int(author), "domain": int(domain), "ip": int(ip)}


def _light(qs: Any) -> Any:
    return qs.only("id", "text", "status", "final_score", "received_at", "report_count", "author_id", "link_id")


def post_detail(*, post_id: int) -> PostDetail:
    from scoring.api import Score

    post = (
        Post.objects.select_related(
            "source", "author", "link__domain", "ip", "claimed_by", "assigned_to", "assigned_queue"
        )
        .filter(pk=post_id)
        .first()
    )
    if post is None:
        raise NotFound("No such post.")
    score_history = list(Score.objects.filter(post_id=post.pk).order_by("-created_at", "-id")[:10])
    score = score_history[0] if score_history else None
    reports = list(Report.objects.filter(post_id=post.pk).order_by("-created_at")[:50])
    records = {
        r.reporter_id: (r.upheld, r.rejected)
        for r in ReporterRecord.objects.filter(
            source_id=post.source_id, reporter_id__in={rep.reporter_id for rep in reports}
        )
    }
    decisions = list(
        Decision.objects.filter(post_id=post.pk)
        .select_related("moderator", "bulk_action")
        .order_by("-created_at", "-id")
    )
    author_posts = list(
        _light(Post.objects.filter(author_id=post.author_id).exclude(pk=post.pk).order_by("-received_at"))[
            :RELATED_LIMIT
        ]
    )
    agg = Post.objects.filter(author_id=post.author_id).aggregate(
        total=Count("id"),
        removed=Count("id", filter=Q(status__in=REJECT_STATUSES)),
        approved=Count("id", filter=Q(status__in=(PostStatus.APPROVED, PostStatus.AUTO_APPROVED))),
        pending=Count("id", filter=Q(status__in=PENDING_STATUSES)),
    )
    same_ip: list[Post] = []
    if post.ip_id:
        same_ip = list(
            _light(Post.objects.filter(ip_id=post.ip_id).exclude(pk=post.pk).order_by("-received_at"))[:RELATED_LIMIT]
        )
    same_domain: list[Post] = []
    domain_id = post.link.domain_id if post.link else None
    if domain_id:
        same_domain = list(
            _light(Post.objects.filter(link__domain_id=domain_id).exclude(pk=post.pk).order_by("-received_at"))[
                :RELATED_LIMIT
            ]
        )
    counts = cluster_counts(author_id=post.author_id, domain_id=domain_id, ip_id=post.ip_id)
    scored_values = evidence_values(score)
    return PostDetail(
        post=post,
        score=score,
        score_history=score_history,
        contributions=contributions_top(score.contributions if score else {}, values=scored_values),
        scored_values=scored_values,
        reports=reports,
        decisions=decisions,
        author_posts=author_posts,
        author_stats=AuthorStats(**agg),
        same_ip=same_ip,
        same_domain=same_domain,
        cluster_counts=counts,
        reason_codes=list(ReasonCode.objects.filter(is_active=True)),
        reporter_records=records,
    )
