from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from dashboard.selectors import metrics as m
from dashboard.selectors.appeals import appeal_figures
from dashboard.selectors.earned_approval import approval_overview
from dashboard.views.charts import Series, bar_chart, line_chart
from moderation.permissions import CAN_VIEW_METRICS, role_required
from moderation.selectors.spot_checks import spot_check_figures
from moderation.services.priority import sla_seconds

# "48h": hourly buckets for the last 48 hours; the others: daily buckets over that many days.
WINDOWS = ("48h", "7", "14", "30", "90")
WINDOW_LABELS = {"48h": "48 hours", "7": "7 days", "14": "14 days", "30": "30 days", "90": "90 days"}
BLUE, RED, GREEN, GREY, AMBER, PURPLE = "#4f46e5", "#e5534b", "#2da44e", "#9aa4b2", "#d97706", "#8250df"


def _pct(v: float) -> str:
    return f"{v * 100:.0f}%"


def _ms(v: float) -> str:
    return f"{v:.0f} ms" if v >= 10 else f"{v:.1f} ms"


def _window(request: HttpRequest) -> tuple[str, str, datetime, list[m.Bucket], list[str]]:
    """(window key, bucket unit, since, buckets, axis labels)."""
    window = request.GET.get("window") or request.GET.get("days") or "14"
    window = window if window in WINDOWS else "14"
    now = timezone.now()
    if window == "48h":
        since = (now - timedelta(hours=47)).replace(minute=0, second=0, microsecond=0)
        hours: list[m.Bucket] = list(m.window_hours(since, 47))
        return window, "hour", since, hours, [h.strftime("%H:00") for h in hours if isinstance(h, datetime)]
    days = int(window)
    since = (now - timedelta(days=days)).replace(hour=0, minute=0, second=0, microsecond=0)
    day_list: list[m.Bucket] = list(m.window_days(since, days))
    return window, "day", since, day_list, [d.strftime("%m-%d") for d in day_list]


@role_required(CAN_VIEW_METRICS)
def metrics(request: HttpRequest) -> HttpResponse:
    window, unit, since, buckets, labels = _window(request)
    per = "hour" if unit == "hour" else "day"

    volume = m.volume_per_bucket(since=since, unit=unit)
    outcomes = m.outcomes_per_bucket(since=since, unit=unit)
    agreement, agreement_buckets = m.model_agreement(since=since, unit=unit)
    by_bucket = {a.day: a for a in agreement_buckets}
    latency, latency_buckets = m.latency_percentiles(since=since, unit=unit)
    text_skips = m.text_model_skips(since=since)
    backlog = m.backlog()
    sla = m.sla_figures(since=since, sla_seconds=sla_seconds())

    empty = {"auto_remove": 0, "auto_approve": 0, "manual": 0, "pending": 0}
    charts = {
        "volume": bar_chart(
            labels, [Series("Posts", BLUE, [volume.get(b, 0) for b in buckets])], title=f"Posts ingested per {per}"
        ),
        "actions": bar_chart(
            labels,
            [
                Series("Auto-removed", RED, [outcomes.get(b, empty)["auto_remove"] for b in buckets]),
                Series("Auto-approved", GREEN, [outcomes.get(b, empty)["auto_approve"] for b in buckets]),
                Series("Decided by a moderator", BLUE, [outcomes.get(b, empty)["manual"] for b in buckets]),
                Series("Pending", GREY, [outcomes.get(b, empty)["pending"] for b in buckets]),
            ],
            title=f"Outcome of the posts received per {per}",
        ),
        "agreement": line_chart(
            labels,
            [
                Series("Auto-remove precision", RED, [_band(by_bucket, b, "remove", "precision") for b in buckets]),
                Series("Auto-remove recall", AMBER, [_band(by_bucket, b, "remove", "recall") for b in buckets]),
                Series("Auto-approve precision", GREEN, [_band(by_bucket, b, "approve", "precision") for b in buckets]),
                Series("Auto-approve recall", PURPLE, [_band(by_bucket, b, "approve", "recall") for b in buckets]),
            ],
            title=f"Model agreement with reviewer labels per {per}",
            y_max=1.0,
            fmt=_pct,
        ),
        "latency": line_chart(
            labels,
            [
                Series("p50", BLUE, [latency_buckets[b][0] if b in latency_buckets else None for b in buckets]),
                Series("p95", AMBER, [latency_buckets[b][1] if b in latency_buckets else None for b in buckets]),
                Series("p99", RED, [latency_buckets[b][2] if b in latency_buckets else None for b in buckets]),
            ],
            title=f"Scoring latency percentiles per {per}",
            fmt=_ms,
        ),
        "backlog_age": bar_chart(
            [name for name, _ in backlog.age_buckets],
            [Series("Queued posts", AMBER, [n for _, n in backlog.age_buckets])],
            title="Queued posts by waiting time",
        ),
    }
    totals = {k: sum(o[k] for o in outcomes.values()) for k in empty}
    return render(
        request,
        "dashboard/metrics.html",
        {
            "nav": "metrics",
            "window": window,
            "window_label": WINDOW_LABELS[window],
            "windows": [(w, WINDOW_LABELS[w]) for w in WINDOWS],
            "charts": charts,
            "text_skips": text_skips,
            "backlog": backlog,
            "sla": sla,
            "volume_total": sum(volume.values()),
            "outcome_totals": totals,
            "moderators": m.decisions_per_moderator(since=since),
            "agreement": agreement,
            "latency": latency,
            "appeal_figures": appeal_figures(),
            "spot_checks": spot_check_figures(since=since),
            "approval": approval_overview(),
            "approval_max_share": settings.EARNED_APPROVAL_MAX_SHARE,
            "approval_min_checks": settings.EARNED_APPROVAL_MIN_CHECKS,
        },
    )


def _band(by_day: dict[Any, m.Agreement], day: object, band: str, what: str) -> float | None:
    agg = by_day.get(day)
    if agg is None:
        return None
    return getattr(getattr(agg, band), what)


@role_required(CAN_VIEW_METRICS)
def triton_panel(request: HttpRequest) -> HttpResponse:
    """Loaded by htmx after the page, so a slow or absent Triton never delays the metrics."""
    return render(request, "dashboard/_triton.html", {"panel": m.triton_panel()})
