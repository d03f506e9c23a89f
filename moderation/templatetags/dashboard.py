"""Small template helpers for the dashboard: score bars, ages, role checks."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django import template
from django.utils import timezone

from moderation import permissions

register = template.Library()


@register.filter
def pct(value: float | None) -> int:
    """0..1 score -> 0..100 for a bar width."""
    if value is None:
        return 0
    return max(0, min(100, round(float(value) * 100)))


@register.filter
def score_level(value: float | None) -> str:
    """A CSS class for a score: high / mid / low / none."""
    if value is None:
        return "none"
    if value >= 0.8:
        return "high"
    if value >= 0.5:
        return "mid"
    return "low"


@register.filter
def short_age(value: datetime | None) -> str:
    """Compact age: 45s, 12m, 3h, 5d, 2y."""
    if value is None:
        return "—"
    seconds = max(0, int((timezone.now() - value).total_seconds()))
    for unit, size in (("y", 365 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


@register.filter
def percent(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "—"
    return f"{float(value) * 100:.{digits}f}%"


@register.filter
def abs_value(value: float) -> float:
    return abs(value)


@register.simple_tag
def query_with(base: dict[str, str], **extra: Any) -> str:
    params = {**base, **{k: v for k, v in extra.items() if v not in (None, "")}}
    return "?" + urlencode(params) if params else ""


@register.simple_tag(takes_context=True)
def roles(context: template.Context) -> dict[str, bool]:
    user = context["request"].user
    return {
        "moderate": permissions.can_moderate(user),
        "metrics": permissions.can_view_metrics(user),
        "administer": permissions.can_administer(user),
    }


@register.filter
def ms(value: float | None) -> str:
    if value is None:
        return "—"
    value = float(value)
    return f"{value:.0f} ms" if value >= 100 else f"{value:.1f} ms"


@register.filter
def duration_s(value: float | None) -> str:
    """Seconds -> 45s / 12m / 3.5h / 2.1d."""
    if value is None:
        return "—"
    v = float(value)
    if v < 60:
        return f"{v:.0f}s"
    if v < 3600:
        return f"{v / 60:.0f}m"
    if v < 86400:
        return f"{v / 3600:.1f}h"
    return f"{v / 86400:.1f}d"


@register.filter
def compact_json(value: object) -> str:
    """A dict as compact JSON for the audit table (autoescaped by the template)."""
    import json

    return json.dumps(value, sort_keys=True, separators=(", ", ": "), default=str)
