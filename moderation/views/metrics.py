from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from moderation.permissions import CAN_VIEW_METRICS, role_required
from moderation.selectors import metrics as m
from moderation.views.charts import Series, bar_chart, line_chart

WINDOWS = (7, 14, 30, 90)
BLUE, RED, GREEN, GREY, AMBER, PURPLE = "#4f46e5", "#e5534b", "#2da44e", "#9aa4b2", "#d97706", "#8250df"


def _pct(v: float) -> str:
    return f"{v * 100:.0f}%"


def _ms(v: float) -> str:
    return f"{v:.0f} ms" if v >= 10 else f"{v:.1f} ms"


@role_required(CAN_VIEW_METRICS)
def metrics(request: HttpRequest) -> HttpResponse:
    try:
        days = int(request.GET.get("days", 14))
    except ValueError:
        days = 14
    days = days if days in WINDOWS else 14
    now = timezone.now()
    since = (now - timedelta(days=days)).replace(hour=0, minute=0, second=0, microsecond=0)
    day_list = m.window_days(since, days)
    labels = [d.strftime("%m-%d") for d in day_list]

    volume = m.volume_per_day(since=since)
    actions = m.actions_per_day(since=since)
    agreement, agreement_days = m.model_agreement(since=since)
    by_day = {a.day: a for a in agreement_days}
    latency, latency_days = m.latency_percentiles(since=since)
    backlog = m.backlog()

    empty = {"auto_remove": 0, "auto_approve": 0, "manual": 0}
    charts = {
        "volume": bar_chart(
            labels, [Series("Posts", BLUE, [volume.get(d, 0) for d in day_list])], title="Posts ingested per day"
        ),
        "actions": bar_chart(
            labels,
            [
                Series("Auto-removed", RED, [actions.get(d, empty)["auto_remove"] for d in day_list]),
                Series("Auto-approved", GREEN, [actions.get(d, empty)["auto_approve"] for d in day_list]),
                Series("Moderator decisions", BLUE, [actions.get(d, empty)["manual"] for d in day_list]),
            ],
            title="Automatic vs manual actions per day",
        ),
        "agreement": line_chart(
            labels,
            [
                Series("Auto-remove precision", RED, [_band(by_day, d, "remove", "precision") for d in day_list]),
                Series("Auto-remove recall", AMBER, [_band(by_day, d, "remove", "recall") for d in day_list]),
                Series("Auto-approve precision", GREEN, [_band(by_day, d, "approve", "precision") for d in day_list]),
                Series("Auto-approve recall", PURPLE, [_band(by_day, d, "approve", "recall") for d in day_list]),
            ],
            title="Model agreement with reviewer labels per day",
            y_max=1.0,
            fmt=_pct,
        ),
        "latency": line_chart(
            labels,
            [
                Series("p50", BLUE, [latency_days[d][0] if d in latency_days else None for d in day_list]),
                Series("p95", AMBER, [latency_days[d][1] if d in latency_days else None for d in day_list]),
                Series("p99", RED, [latency_days[d][2] if d in latency_days else None for d in day_list]),
            ],
            title="Scoring latency percentiles per day",
            fmt=_ms,
        ),
        "backlog_age": bar_chart(
            [name for name, _ in backlog.age_buckets],
            [Series("Queued posts", AMBER, [n for _, n in backlog.age_buckets])],
            title="Queued posts by waiting time",
        ),
    }
    return render(
        request,
        "moderation/metrics.html",
        {
            "nav": "metrics",
            "days": days,
            "windows": WINDOWS,
            "charts": charts,
            "backlog": backlog,
            "volume_total": sum(volume.values()),
            "moderators": m.decisions_per_moderator(since=since),
            "agreement": agreement,
            "latency": latency,
            "colors": {"blue": BLUE, "red": RED, "green": GREEN, "amber": AMBER, "purple": PURPLE},
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
    return render(request, "moderation/_triton.html", {"panel": m.triton_panel()})
