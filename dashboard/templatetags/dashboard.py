"""Small template helpers for the dashboard: score bars and colours, ages, labels, role checks."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format

from moderation import permissions

register = template.Library()


@register.filter
def pct(value: float | None) -> int:
    """0..1 score -> 0..100 for a bar width."""
    if value is None:
        return 0
    return max(0, min(100, round(float(value) * 100)))


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


ZONED_FORMAT = "Y-m-d H:i T"
_ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")


@register.filter
def zoned(value: datetime | str | None) -> str:
    """A stored time in the moderator's zone, zone named: "2026-11-27 09:00 EST". Also takes
    the ISO strings audit entries keep."""
    if value is None or value == "":
        return "—"
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return value
    else:
        moment = value
    if timezone.is_naive(moment):
        return date_format(moment, "Y-m-d H:i")
    return date_format(timezone.localtime(moment), ZONED_FORMAT)


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


@register.filter
def get_item(mapping: dict[str, Any] | None, key: str) -> Any:
    return (mapping or {}).get(key)


@register.filter
def score_band(value: float | None, thresholds: Any) -> str:
    """A CSS class for a score from the live policy: high (would be auto-removed), mid (queued for
    review), low (would be auto-approved), none. `thresholds` has remove_threshold and
    approve_threshold (scoring's active DecisionPolicy); without it, the policy defaults."""
    if value is None:
        return "none"
    remove = float(getattr(thresholds, "remove_threshold", 0.9))
    approve = float(getattr(thresholds, "approve_threshold", 0.2))
    if value >= remove:
        return "high"
    if value >= approve:
        return "mid"
    return "low"


@register.filter
def feature_label(name: str) -> str:
    from contracts.feature_schema import feature_display_name

    return feature_display_name(str(name))


@register.filter
def rate(value: float | None) -> str:
    """A rate with the precision it needs: 2 of 2,045 is "0.098 %", not "0 %"; from 1 % on,
    one decimal, from 10 % on, none."""
    if value is None:
        return "—"
    pct_value = float(value) * 100
    if pct_value == 0:
        return "0 %"
    if pct_value >= 10:
        return f"{pct_value:.0f} %"
    if pct_value >= 1:
        return f"{pct_value:.1f} %"
    return f"{pct_value:.2g} %"


@register.filter
def feature_value(value: float | None) -> str:
    """A feature's value as a person reads it: counts whole, rates and scores to 2 places."""
    if value is None:
        return "not recorded"
    if float(value).is_integer() and abs(value) >= 1:
        return f"{int(value):,}"
    return f"{value:.2f}"


@register.filter
def model_label(key: str) -> str:
    """`behaviour_model` / `behaviour` -> "Behaviour model"."""
    base = str(key).removesuffix("_model").replace("_", " ").strip()
    return f"{base[:1].upper()}{base[1:]} model"


@register.filter
def text_warnings(value: str | None) -> list[str]:
    from moderation.text_safety import spoofing_warnings

    return spoofing_warnings(value or "")


@register.filter
def bidi_visible(value: str | None) -> str:
    """Bidirectional control characters shown as [U+202E] instead of reordering the text."""
    from moderation.text_safety import bidi_controls_visible

    return bidi_controls_visible(value or "")


@register.filter
def audit_diff(entry: Any, reason_labels: dict[str, str] | None = None) -> list[tuple[str, str, str]]:
    """(field, before, after) for every key that differs between an audit row's before and
    after, values as short readable text; reason codes by their labels when `reason_labels`
    (code -> label) is given."""
    before = entry.before if isinstance(entry.before, dict) else {}
    after = entry.after if isinstance(entry.after, dict) else {}
    rows: list[tuple[str, str, str]] = []
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        if b == a:
            continue
        if reason_labels and key.endswith("reason_code"):
            b, a = reason_labels.get(b, b) if b else b, reason_labels.get(a, a) if a else a
            key = key.removesuffix("_code")
        rows.append((key.replace("_", " "), _readable(b), _readable(a)))
    return rows


# How a moderator reads a domain's or an IP's list status.
LIST_STATUS_WORDS = {"unknown": "not listed", "allow": "trusted", "block": "blocked"}


@register.filter
def list_status(value: str) -> str:
    return LIST_STATUS_WORDS.get(str(value), str(value))


@register.filter
def language_name(code: str | None) -> str:
    """An ISO 639-1 code as a language's English name ("de" -> "German"); "und", the
    detector's "undetermined", reads "not detected"."""
    from django.conf.locale import LANG_INFO

    if not code:
        return "unknown"
    if code == "und":
        return "not detected"
    info = LANG_INFO.get(code)
    return str(info["name"]) if info and "name" in info else code


def _readable(value: Any) -> str:
    """Statuses and labels by their display names ("Not spam", "Removed by moderator")."""
    from moderation.models import Label, PostStatus

    names = {**dict(PostStatus.choices), **dict(Label.choices)}
    if value is None:
        return "—"
    if isinstance(value, dict):
        text = ", ".join(
            f"#{k}: {_readable(v)}" if str(k).isdigit() else f"{k}: {_readable(v)}" for k, v in sorted(value.items())
        )
    elif isinstance(value, list):
        text = ", ".join(_readable(v) for v in value)
    elif isinstance(value, str) and _ISO_DATETIME.match(value):
        text = zoned(value)  # an expiry or a time the entry recorded, in the reader's zone
    else:
        text = str(names.get(value, value)) if isinstance(value, str) else str(value)
    return text if len(text) <= 160 else text[:159] + "…"


@register.filter
def sla_left(seconds: float | None) -> str:
    """Seconds to the SLA deadline -> "due in 2h" / "overdue 35m"."""
    if seconds is None:
        return ""
    span = duration_s(abs(seconds))
    return f"due in {span}" if seconds > 0 else f"overdue {span}"


@register.filter
def pct5(value: float | None) -> int:
    """0..1 -> 0..100 in steps of 5, for a width class (w-0 ... w-100): no style attribute, so
    the page works under a Content-Security-Policy without 'unsafe-inline' styles."""
    return int(round(pct(value) / 5) * 5)


@register.filter
def post_version(post: Any) -> str:
    from moderation.services.decisions import post_version as version

    return version(post)


@register.filter
def pct_of_100(value: float | None) -> int:
    """0..100 -> the nearest step of 5, for a width class."""
    if value is None:
        return 0
    return int(round(max(0.0, min(100.0, float(value))) / 5) * 5)


@register.filter
def div_rate(part: float | None, whole: float | None) -> str:
    """part / whole as a rate (see `rate`); "—" without a whole."""
    if not whole:
        return "—"
    return rate(float(part or 0) / float(whole))


@register.filter
def ratio5(part: float | None, whole: float | None) -> int:
    """part / whole as a percentage in steps of 5, for a width class."""
    if not part or not whole:
        return 0
    return pct_of_100(float(part) / float(whole) * 100)
