"""Formatting helpers for the ML pages."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html, format_html_join

register = template.Library()


@register.filter
def metric(value: Any, digits: int = 3) -> str:
    """0.91234 -> "0.912"; ints stay ints; missing values are a dash."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


@register.filter
def category_label(code: Any) -> str:
    """A policy category's configured label (moderation.categories)."""
    from moderation.categories import category_label as label

    return label(str(code or ""))


@register.filter
def dataset_model(dataset: Any) -> str:
    """The model a dataset version was built for (spam for every dataset before categories)."""
    from feedback.services.datasets import dataset_model as model

    return model(dataset)


@register.filter
def signed(value: Any, digits: int = 3) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return ""
    return f"{value:+.{digits}f}" if isinstance(value, float) else f"{value:+d}"


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    return mapping.get(key) if isinstance(mapping, dict) else None


DIAGRAM_SIZE = 200
DIAGRAM_PAD = 28


def _point(value: float) -> float:
    return round(DIAGRAM_PAD + value * DIAGRAM_SIZE, 1)


def _flip(value: float) -> float:
    return round(DIAGRAM_PAD + (1.0 - value) * DIAGRAM_SIZE, 1)


def _series(bins: Any, colour: str) -> str:
    points = [
        (_point(b["mean_predicted"]), _flip(b["observed"]), int(b["n"]))
        for b in bins or []
        if b.get("n") and b.get("mean_predicted") is not None
    ]
    if not points:
        return ""
    line = format_html(
        '<polyline stroke="{}" stroke-width="1.5" fill="none" points="{}"/>',
        colour,
        " ".join(f"{x},{y}" for x, y, _ in points),
    )
    dots = format_html_join(
        "",
        '<circle fill="{}" cx="{}" cy="{}" r="3"><title>{} rows</title></circle>',
        ((colour, x, y, n) for x, y, n in points),
    )
    return line + dots


@register.simple_tag
def reliability_svg(summary: Any) -> str:
    """A reliability diagram as inline SVG, drawn here on the server (no script, so it survives a
    strict Content-Security-Policy): observed spam share against mean predicted probability per
    bin, before (grey) and after (accent) calibration; the diagonal is perfect calibration."""
    if not isinstance(summary, dict):
        return ""
    full = DIAGRAM_SIZE + 2 * DIAGRAM_PAD
    lo, hi = _point(0.0), _point(1.0)
    frame = format_html(
        '<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#c9ced6"/>'
        '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#c9ced6" stroke-dasharray="4 3"/>'
        '<text x="{}" y="{}" font-size="10" text-anchor="middle">mean predicted</text>'
        '<text x="10" y="{}" font-size="10" text-anchor="middle" transform="rotate(-90 10 {})">'
        "observed spam share</text>",
        lo,
        lo,
        DIAGRAM_SIZE,
        DIAGRAM_SIZE,
        lo,
        hi,
        hi,
        lo,
        (lo + hi) / 2,
        full - 6,
        (lo + hi) / 2,
        (lo + hi) / 2,
    )
    before = _series(summary.get("reliability_before"), "#8c959f")
    after = _series(summary.get("reliability_after"), "#4f46e5")
    return format_html(
        '<svg class="reliability" role="img" viewBox="0 0 {} {}" width="{}" height="{}">'
        "<title>Reliability diagram: ECE {} before, {} after</title>{}{}{}</svg>",
        full,
        full,
        full,
        full,
        metric(summary.get("ece_before"), 4),
        metric(summary.get("ece_after"), 4),
        frame,
        before,
        after,
    )


@register.filter
def get_index(sequence: Any, index: int) -> Any:
    try:
        return sequence[index]
    except (IndexError, KeyError, TypeError):
        return None
