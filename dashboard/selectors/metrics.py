"""Figures for the metrics page. Every function is a bounded number of aggregate queries
over a time window; nothing loads rows into Python except small grouped results."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import Count, DurationField, ExpressionWrapper, F, Min, OuterRef, Q, Subquery, Value
from django.db.models.functions import TruncDate, TruncHour
from django.utils import timezone

from moderation.models import Decision, Label, Post, PostStatus
from moderation.services.decisions import DECIDED_STATUSES

# Buckets: "hour" (the last 48 hours) or "day". Keys are aware datetimes (hour) or dates (day).
Bucket = datetime | date


def window_days(start: datetime, days: int) -> list[date]:
    first = start.date()
    return [first + timedelta(days=i) for i in range(days + 1)]


def window_hours(start: datetime, hours: int) -> list[datetime]:
    first = start.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return [first + timedelta(hours=i) for i in range(hours + 1)]


def _trunc(unit: str, column: str) -> Any:
    return TruncHour(column, tzinfo=UTC) if unit == "hour" else TruncDate(column)


def _key(unit: str, value: Any) -> Bucket:
    """A bucket value as the window lists hold it (SQLite may return naive datetimes)."""
    if unit == "hour" and isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return value


def volume_per_bucket(*, since: datetime, unit: str = "day") -> dict[Bucket, int]:
    rows = (
        Post.objects.filter(received_at__gte=since)
        .annotate(bucket=_trunc(unit, "received_at"))
        .values("bucket")
        .annotate(n=Count("id"))
    )
    return {_key(unit, r["bucket"]): r["n"] for r in rows}


def volume_per_day(*, since: datetime) -> dict[Bucket, int]:
    return volume_per_bucket(since=since, unit="day")


def percentile_cont(values: list[float], q: float) -> float | None:
    """PostgreSQL's percentile_cont (linear interpolation) over sorted values; the fallback for
    databases without it (SQLite, the laptop default)."""
    if not values:
        return None
    pos = (len(values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


@dataclass
class Backlog:
    queued: int = 0
    received: int = 0
    oldest_age_s: float | None = None
    p50_age_s: float | None = None
    p95_age_s: float | None = None
    age_buckets: list[tuple[str, int]] = field(default_factory=list)


AGE_BUCKETS = (("< 1 h", 3600), ("1–6 h", 6 * 3600), ("6–24 h", 86400), ("1–3 d", 3 * 86400), ("> 3 d", None))


def backlog() -> Backlog:
    """Current backlog and how long the queued posts have waited."""
    now = timezone.now()
    counts = Post.objects.filter(status__in=(PostStatus.QUEUED, PostStatus.RECEIVED)).aggregate(
        queued=Count("id", filter=Q(status=PostStatus.QUEUED)),
        received=Count("id", filter=Q(status=PostStatus.RECEIVED)),
    )
    queued = Post.objects.filter(status=PostStatus.QUEUED)
    bucket_aggs: dict[str, Any] = {"oldest": Min("received_at")}
    lower = 0
    for i, (_, upper) in enumerate(AGE_BUCKETS):
        cond = Q(received_at__lte=now - timedelta(seconds=lower))
        if upper is not None:
            cond &= Q(received_at__gt=now - timedelta(seconds=upper))
            lower = upper
        bucket_aggs[f"b{i}"] = Count("id", filter=cond)
    aggs = queued.aggregate(**bucket_aggs)
    oldest = aggs["oldest"]
    bucket_counts = [aggs[f"b{i}"] for i in range(len(AGE_BUCKETS))]
    p50 = p95 = None
    if connection.vendor == "postgresql":
        with connection.cursor() as cur:
            cur.execute(
                "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM %s - received_at)),"
                " percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM %s - received_at))"
                " FROM moderation_post WHERE status = 'queued'",
                [now, now],
            )
            p50, p95 = cur.fetchone()
    elif counts["queued"]:
        # Other databases have no percentile_cont: the ages of the queued posts, oldest last.
        ages = sorted((now - r).total_seconds() for r in queued.values_list("received_at", flat=True))
        p50, p95 = percentile_cont(ages, 0.5), percentile_cont(ages, 0.95)
    return Backlog(
        queued=counts["queued"],
        received=counts["received"],
        oldest_age_s=(now - oldest).total_seconds() if oldest else None,
        p50_age_s=float(p50) if p50 is not None else None,
        p95_age_s=float(p95) if p95 is not None else None,
        age_buckets=[(name, int(n)) for (name, _), n in zip(AGE_BUCKETS, bucket_counts, strict=True)],
    )


def decisions_per_moderator(*, since: datetime) -> list[dict[str, Any]]:
    rows = (
        Decision.objects.filter(created_at__gte=since, undone_at__isnull=True)
        .values("moderator__username")
        .annotate(
            total=Count("id"),
            spam=Count("id", filter=Q(label=Label.SPAM)),
            ham=Count("id", filter=Q(label=Label.HAM)),
            bulk=Count("id", filter=Q(bulk_action__isnull=False)),
        )
        .order_by("-total")[:25]
    )
    return [
        {
            "moderator": r["moderator__username"],
            "total": r["total"],
            "spam": r["spam"],
            "ham": r["ham"],
            "bulk": r["bulk"],
        }
        for r in rows
    ]


def outcomes_per_bucket(*, since: datetime, unit: str = "day") -> dict[Bucket, dict[str, int]]:
    """What happened to the posts received in each bucket, one outcome per post: removed or
    approved automatically, decided by a moderator (whatever the models did first), or still
    pending. Counted on posts, so a re-scored post or a re-decided one counts once."""
    out: dict[Bucket, dict[str, int]] = defaultdict(
        lambda: {"auto_remove": 0, "auto_approve": 0, "manual": 0, "pending": 0}
    )
    rows = (
        Post.objects.filter(received_at__gte=since)
        .annotate(bucket=_trunc(unit, "received_at"))
        .values("bucket", "status")
        .annotate(n=Count("id"))
    )
    for r in rows:
        status = r["status"]
        if status == PostStatus.AUTO_REMOVED:
            key = "auto_remove"
        elif status == PostStatus.AUTO_APPROVED:
            key = "auto_approve"
        elif status in DECIDED_STATUSES:
            key = "manual"
        else:
            key = "pending"
        out[_key(unit, r["bucket"])][key] += r["n"]
    return dict(out)


def actions_per_day(*, since: datetime) -> dict[Bucket, dict[str, int]]:
    return outcomes_per_bucket(since=since, unit="day")


@dataclass
class SlaFigures:
    sla_seconds: int
    breached_now: int  # queued posts waiting longer than the SLA
    decided: int  # moderator decisions (kept, not undone) in the window on posts that were pending
    decided_within: int  # ... made within the SLA of the post's arrival

    @property
    def within_rate(self) -> float | None:
        return self.decided_within / self.decided if self.decided else None


def sla_figures(*, since: datetime, sla_seconds: int) -> SlaFigures:
    now = timezone.now()
    sla = timedelta(seconds=sla_seconds)
    breached = Post.objects.filter(status=PostStatus.QUEUED, received_at__lt=now - sla).count()
    waited = ExpressionWrapper(F("created_at") - F("post__received_at"), output_field=DurationField())
    agg = (
        Decision.objects.filter(created_at__gte=since, undone_at__isnull=True)
        .exclude(previous_status__in=[*DECIDED_STATUSES, PostStatus.AUTO_REMOVED, PostStatus.AUTO_APPROVED])
        .annotate(waited=waited)
        .aggregate(total=Count("id"), within=Count("id", filter=Q(waited__lte=Value(sla))))
    )
    return SlaFigures(
        sla_seconds=sla_seconds, breached_now=breached, decided=agg["total"], decided_within=agg["within"]
    )


@dataclass
class BandAgreement:
    """Precision/recall of one automatic band against moderator labels."""

    hits: int = 0  # band and moderator agree
    band_reviewed: int = 0  # posts in the band that a moderator labelled
    label_total: int = 0  # posts the moderator gave the band's label (that had a score)

    @property
    def precision(self) -> float | None:
        return self.hits / self.band_reviewed if self.band_reviewed else None

    @property
    def recall(self) -> float | None:
        return self.hits / self.label_total if self.label_total else None


@dataclass
class Agreement:
    day: Bucket | None
    remove: BandAgreement
    approve: BandAgreement


def model_agreement(*, since: datetime, unit: str = "day") -> tuple[Agreement, list[Agreement]]:
    """Agreement of the auto-remove and auto-approve bands with reviewer labels, overall and
    per day of the decision. A moderator decision on an auto-actioned post counts: it is
    exactly the review that tells whether the automatic action was right. The band is the
    action of the post's latest score; undone decisions are left out."""
    from scoring.api import Action, Score

    latest_action = Subquery(
        Score.objects.filter(post_id=OuterRef("post_id")).order_by("-created_at", "-id").values("action")[:1]
    )
    rows = (
        Decision.objects.filter(created_at__gte=since, undone_at__isnull=True)
        .annotate(band=latest_action, day=_trunc(unit, "created_at"))
        .exclude(band__isnull=True)
        .values("day", "band", "label")
        .annotate(n=Count("id"))
    )
    per_day: dict[Bucket, Agreement] = {}
    total = Agreement(day=None, remove=BandAgreement(), approve=BandAgreement())
    for r in rows:
        day = _key(unit, r["day"])
        day_agg = per_day.setdefault(day, Agreement(day=day, remove=BandAgreement(), approve=BandAgreement()))
        for agg in (day_agg, total):
            n = r["n"]
            if r["label"] == Label.SPAM:
                agg.remove.label_total += n
            else:
                agg.approve.label_total += n
            if r["band"] == Action.REMOVE:
                agg.remove.band_reviewed += n
                if r["label"] == Label.SPAM:
                    agg.remove.hits += n
            elif r["band"] == Action.APPROVE:
                agg.approve.band_reviewed += n
                if r["label"] == Label.HAM:
                    agg.approve.hits += n
    return total, [per_day[d] for d in sorted(per_day)]


@dataclass(frozen=True)
class TextModelSkips:
    scored: int  # Score rows a model wrote (block-list short-circuits excluded)
    skipped: int  # of them, those whose text score the cascade decided without the transformer

    @property
    def share(self) -> float | None:
        return self.skipped / self.scored if self.scored else None


def text_model_skips(*, since: datetime) -> TextModelSkips:
    """How many model-scored posts skipped the transformer (Score.features' text_model_skipped,
    written by scoring from spam_pipeline's TEXT_MODEL_SKIPPED): one aggregate query."""
    from scoring.api import Score

    agg = Score.objects.filter(created_at__gte=since, short_circuit_reason="").aggregate(
        scored=Count("id"), skipped=Count("id", filter=Q(features__text_model_skipped=True))
    )
    return TextModelSkips(scored=agg["scored"], skipped=agg["skipped"])


def latency_percentiles(
    *, since: datetime, unit: str = "day"
) -> tuple[dict[str, float | None], dict[Bucket, tuple[float, float, float]]]:
    """Scoring latency (Score.latency_ms) p50/p95/p99 overall and per bucket (hour or day)."""
    if connection.vendor != "postgresql":
        return _latency_percentiles_portable(since=since, unit=unit)
    sql = (
        "SELECT {group} percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms),"
        " percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms),"
        " percentile_cont(0.99) WITHIN GROUP (ORDER BY latency_ms), count(*)"
        " FROM scoring_score WHERE created_at >= %s {tail}"
    )
    trunc = (
        "date_trunc('hour', created_at AT TIME ZONE 'UTC')"
        if unit == "hour"
        else "(created_at AT TIME ZONE 'UTC')::date"
    )
    with connection.cursor() as cur:
        cur.execute(sql.format(group="", tail=""), [since])
        p50, p95, p99, n = cur.fetchone()
        cur.execute(sql.format(group=f"{trunc} AS bucket,", tail="GROUP BY bucket ORDER BY bucket"), [since])
        buckets = {_key(unit, row[0]): (float(row[1]), float(row[2]), float(row[3])) for row in cur.fetchall()}
    overall = {"p50": p50, "p95": p95, "p99": p99, "count": n}
    return overall, buckets


def _latency_percentiles_portable(
    *, since: datetime, unit: str
) -> tuple[dict[str, float | None], dict[Bucket, tuple[float, float, float]]]:
    """The same figures where the database has no percentile_cont (SQLite, the laptop default):
    the window's latencies are read and ranked here."""
    from scoring.api import Score

    rows = (
        Score.objects.filter(created_at__gte=since)
        .annotate(bucket=_trunc(unit, "created_at"))
        .values_list("bucket", "latency_ms")
    )
    by_bucket: dict[Bucket, list[float]] = defaultdict(list)
    everything: list[float] = []
    for bucket, latency in rows.iterator(chunk_size=5000):
        by_bucket[_key(unit, bucket)].append(float(latency))
        everything.append(float(latency))
    everything.sort()
    overall: dict[str, float | None] = {
        "p50": percentile_cont(everything, 0.5),
        "p95": percentile_cont(everything, 0.95),
        "p99": percentile_cont(everything, 0.99),
        "count": len(everything),
    }
    buckets: dict[Bucket, tuple[float, float, float]] = {}
    for key, values in by_bucket.items():
        values.sort()
        buckets[key] = (
            percentile_cont(values, 0.5) or 0.0,
            percentile_cont(values, 0.95) or 0.0,
            percentile_cont(values, 0.99) or 0.0,
        )
    return overall, buckets


# --- Triton's Prometheus metrics --------------------------------------------------------------

_METRIC_LINE = re.compile(r"^(?P<name>nv_[a-z_]+)\{(?P<labels>[^}]*)\}\s+(?P<value>[-+0-9.eE]+|NaN)")
_LABEL = re.compile(r'(\w+)="([^"]*)"')
TRITON_COUNTERS = {
    "nv_inference_request_success": "success",
    "nv_inference_request_failure": "failure",
    "nv_inference_count": "inferences",
    "nv_inference_exec_count": "executions",
    "nv_inference_request_duration_us": "request_us",
    "nv_inference_queue_duration_us": "queue_us",
    "nv_inference_compute_input_duration_us": "compute_input_us",
    "nv_inference_compute_infer_duration_us": "compute_infer_us",
    "nv_inference_compute_output_duration_us": "compute_output_us",
}


@dataclass
class TritonModelStats:
    model: str
    version: str
    values: dict[str, float] = field(default_factory=dict)

    def _per_request(self, key: str) -> float | None:
        n = self.values.get("success", 0.0)
        return self.values.get(key, 0.0) / n / 1000.0 if n else None  # ms

    @property
    def avg_request_ms(self) -> float | None:
        return self._per_request("request_us")

    @property
    def avg_queue_ms(self) -> float | None:
        return self._per_request("queue_us")

    @property
    def avg_compute_ms(self) -> float | None:
        n = self.values.get("success", 0.0)
        if not n:
            return None
        total = sum(self.values.get(k, 0.0) for k in ("compute_input_us", "compute_infer_us", "compute_output_us"))
        return total / n / 1000.0

    @property
    def avg_batch(self) -> float | None:
        execs = self.values.get("executions", 0.0)
        return self.values.get("inferences", 0.0) / execs if execs else None


def triton_parse_metrics(text: str) -> list[TritonModelStats]:
    """Per-model counters from Triton's Prometheus text exposition."""
    models: dict[tuple[str, str], TritonModelStats] = {}
    for line in text.splitlines():
        m = _METRIC_LINE.match(line)
        if not m or m.group("name") not in TRITON_COUNTERS:
            continue
        labels = dict(_LABEL.findall(m.group("labels")))
        if "model" not in labels:
            continue
        key = (labels["model"], labels.get("version", ""))
        stats = models.setdefault(key, TritonModelStats(model=key[0], version=key[1]))
        try:
            value = float(m.group("value"))
        except ValueError:
            continue
        name = TRITON_COUNTERS[m.group("name")]
        stats.values[name] = stats.values.get(name, 0.0) + value
    return sorted(models.values(), key=lambda s: (s.model, s.version))


def triton_metrics_text() -> str:
    """Triton's Prometheus page, through the shared client (raises TritonUnavailable)."""
    from scoring.api import triton_metrics_text as metrics_text

    return metrics_text()


@dataclass
class TritonPanel:
    ok: bool
    models: list[TritonModelStats]
    error: str = ""


def triton_panel() -> TritonPanel:
    try:
        text = triton_metrics_text()
    except Exception as exc:  # any failure to reach Triton is shown, never raised
        return TritonPanel(ok=False, models=[], error=f"{type(exc).__name__}: {exc}"[:300])
    return TritonPanel(ok=True, models=triton_parse_metrics(text))


def unscored_oldest_age_s() -> float:
    """Seconds the oldest post still waiting for its first score has waited (0 when none):
    the scoring lag, for the Prometheus gauge. One lookup on the partial index post_received_idx."""
    oldest = Post.objects.filter(status=PostStatus.RECEIVED).aggregate(oldest=Min("received_at"))["oldest"]
    return max((timezone.now() - oldest).total_seconds(), 0.0) if oldest else 0.0
