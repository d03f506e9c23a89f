"""Queue priority: how much harm a queued post may do, and how long it has waited.

    effective priority = score + min(report weight, REPORT_WEIGHT_CAP) + waited / SLA

- score: the post's final score (0..1; unscored posts count 0);
- report weight: the sum over its reports of the reason's severity (DASHBOARD_REPORT_SEVERITY,
  DASHBOARD_REPORT_SEVERITY_DEFAULT for other reasons) times the reporter's trust;
- trust: (upheld + 1) / (upheld + rejected + 2) * 2 from the reporter's ReporterRecord, so an
  unknown reporter weighs 1, one whose reports were always upheld approaches 2 and one whose
  reports were always rejected approaches 0;
- waited / SLA: one point per DASHBOARD_SLA_SECONDS waited.

`Post.priority` stores the effective priority minus now / SLA, i.e. harm - received_at / SLA.
The subtracted term is the same for every row at any moment, so ordering by the stored column
(the partial index post_priority_idx) is ordering by effective priority, with no per-row
computation on read. It is rewritten when a report arrives, when a score is written and when a
decision is undone; changing DASHBOARD_SLA_SECONDS or the weights needs
`manage.py queue_priority_refresh`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Expression, F, FloatField, Func, Value
from django.db.models.functions import Coalesce, Greatest, Least
from django.utils import timezone

from moderation.models import PENDING_STATUSES, Label, Post, Report, ReporterRecord

REPORT_WEIGHT_CAP = 3.0
DEFAULT_SEVERITY = {
    "csam": 3.0,
    "violence": 2.0,
    "threat": 2.0,
    "self_harm": 2.0,
    "harassment": 1.0,
    "hate": 1.0,
    "phishing": 1.0,
    "scam": 1.0,
    "malware": 1.0,
    "spam": 0.5,
}


def sla_seconds() -> int:
    return max(60, int(getattr(settings, "DASHBOARD_SLA_SECONDS", 4 * 3600)))


def severity(reason: str) -> float:
    weights = getattr(settings, "DASHBOARD_REPORT_SEVERITY", None) or DEFAULT_SEVERITY
    default = float(getattr(settings, "DASHBOARD_REPORT_SEVERITY_DEFAULT", 0.5))
    return float(weights.get(reason.strip().lower(), default))


def reporter_trust(*, upheld: int, rejected: int) -> float:
    return (upheld + 1) / (upheld + rejected + 2) * 2


class EpochSeconds(Func):
    """Seconds since 1970 of a datetime column; Django's Extract has no portable 'epoch'."""

    output_field = FloatField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template="EXTRACT(EPOCH FROM %(expressions)s)::float8", **extra)

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template="CAST(strftime('%%s', %(expressions)s) AS REAL)", **extra)


def priority_expression() -> Expression:
    """The stored key, as SQL over the row's own columns."""
    harm = Coalesce(F("final_score"), Value(0.0)) + Least(F("report_weight"), Value(REPORT_WEIGHT_CAP))
    return harm - EpochSeconds(F("received_at")) / Value(float(sla_seconds()))


def effective_priority(*, stored: float, now: datetime | None = None) -> float:
    """The stored key turned back into harm + waited / SLA: what ordering by it means."""
    now = now or timezone.now()
    return stored + now.timestamp() / sla_seconds()


@dataclass(frozen=True, slots=True)
class PriorityParts:
    """A queued post's priority as its reasons, from the row's own columns (not the stored
    key, which a row written before the key existed may lack)."""

    score: float | None
    report_count: int
    report_weight: float  # capped at REPORT_WEIGHT_CAP, as it counts
    waited_slas: float  # time waited / SLA
    due_in_seconds: float  # negative when overdue

    @property
    def total(self) -> float:
        return (self.score or 0.0) + self.report_weight + self.waited_slas


def priority_parts(
    *, final_score: float | None, report_count: int, report_weight: float, received_at: datetime, now: datetime
) -> PriorityParts:
    sla = sla_seconds()
    waited = max(0.0, (now - received_at).total_seconds())
    return PriorityParts(
        score=final_score,
        report_count=report_count,
        report_weight=min(report_weight, REPORT_WEIGHT_CAP),
        waited_slas=waited / sla,
        due_in_seconds=sla - waited,
    )


def posts_priority_refresh(*, post_ids: Sequence[int]) -> int:
    """Recompute the stored priority of these posts in one UPDATE."""
    if not post_ids:
        return 0
    return Post.objects.filter(pk__in=list(post_ids)).update(priority=priority_expression())


def posts_report_weight_refresh(*, post_ids: Sequence[int]) -> None:
    """Recompute the report weight (and then the priority) of these posts from their reports
    and their reporters' current records: three reads, one UPDATE per post with reports, one
    for the rest and one for the priorities."""
    if not post_ids:
        return
    reports = list(Report.objects.filter(post_id__in=list(post_ids)).values_list("post_id", "reason", "reporter_id"))
    sources: dict[int, int] = dict(Post.objects.filter(pk__in=list(post_ids)).values_list("pk", "source_id"))
    records = {
        (r.source_id, r.reporter_id): r
        for r in ReporterRecord.objects.filter(
            source_id__in=set(sources.values()), reporter_id__in={rep for _, _, rep in reports}
        )
    }
    weights: dict[int, float] = defaultdict(float)
    for post_id, reason, reporter_id in reports:
        record = records.get((sources.get(post_id, 0), reporter_id))
        trust = reporter_trust(upheld=record.upheld, rejected=record.rejected) if record else 1.0
        weights[post_id] += severity(reason) * trust
    unreported = [pk for pk in post_ids if pk not in weights]
    if unreported:
        Post.objects.filter(pk__in=unreported).update(report_weight=0.0)
    for post_id, weight in weights.items():
        Post.objects.filter(pk=post_id).update(report_weight=round(weight, 6))
    posts_priority_refresh(post_ids=post_ids)


def reporter_records_relabel(*, post: Post, old_label: str | None, new_label: str | None) -> None:
    """Move the post's reporters' records from one effective label to another: spam upholds
    their reports, not-spam rejects them; None is "no live decision" (undone)."""
    if old_label == new_label:
        return
    reporter_ids = sorted(set(Report.objects.filter(post_id=post.pk).values_list("reporter_id", flat=True)))
    if not reporter_ids:
        return
    delta_upheld = int(new_label == Label.SPAM) - int(old_label == Label.SPAM)
    delta_rejected = int(new_label == Label.HAM) - int(old_label == Label.HAM)
    ReporterRecord.objects.bulk_create(
        [ReporterRecord(source_id=post.source_id, reporter_id=r) for r in reporter_ids], ignore_conflicts=True
    )
    ReporterRecord.objects.filter(source_id=post.source_id, reporter_id__in=reporter_ids).update(
        upheld=Greatest(F("upheld") + delta_upheld, Value(0)),
        rejected=Greatest(F("rejected") + delta_rejected, Value(0)),
        updated_at=timezone.now(),
    )


def pending_priority_refresh_all(*, chunk: int = 2000) -> int:
    """Every pending post's report weight and priority (after the SLA or the weights changed)."""
    ids = list(Post.objects.filter(status__in=PENDING_STATUSES).order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(ids), chunk):
        posts_report_weight_refresh(post_ids=ids[start : start + chunk])
    return len(ids)
