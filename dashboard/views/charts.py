"""Tiny server-side SVG charts (no JS library): stacked bars and lines, with axis labels
and a <title> per mark so a hover or a screen reader gets the exact value."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

W, H = 640, 200
PAD_L, PAD_R, PAD_T, PAD_B = 44, 10, 10, 26


@dataclass
class Series:
    name: str
    color: str
    values: Sequence[float | None]


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    for step in (1, 2, 4, 8, 10):
        magnitude = 10 ** (len(str(int(value))) - 1)
        candidate = step * magnitude
        if candidate >= value:
            return float(candidate)
    return float(value)


# Width of one axis-label character in viewBox units (the charts' 11 px labels, tabular digits).
CHAR_W = 6.6


def _left_pad(y_max: float, fmt: Callable[[float], str]) -> float:
    """Room for the longest y-axis label ("10,000 ms"), so no label is cut at the left edge."""
    longest = max(len(fmt(y_max * i / 4)) for i in range(5))
    return max(float(PAD_L), 10 + CHAR_W * longest)


def _frame(labels: Sequence[str], y_max: float, fmt: Callable[[float], str], title: str, left: float) -> list[str]:
    parts = [
        f'<svg class="chart" viewBox="0 0 {W} {H}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    ]
    plot_h = H - PAD_T - PAD_B
    for i in range(5):
        y = PAD_T + plot_h - plot_h * i / 4
        parts.append(f'<line class="grid" x1="{left:.1f}" x2="{W - PAD_R}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(f'<text x="{left - 6:.1f}" y="{y + 3:.1f}" text-anchor="end">{escape(fmt(y_max * i / 4))}</text>')
    n = max(len(labels), 1)
    step = max(1, n // 8)
    slot = (W - left - PAD_R) / n
    for i, label in enumerate(labels):
        if i % step == 0 or i == n - 1:
            x = left + slot * (i + 0.5)
            parts.append(f'<text x="{x:.1f}" y="{H - 8}" text-anchor="middle">{escape(label)}</text>')
    return parts


def _default_fmt(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 or v == 0 else f"{v:.2g}"


def bar_chart(
    labels: Sequence[str], series: Sequence[Series], *, title: str, fmt: Callable[[float], str] = _default_fmt
) -> SafeString:
    totals = [sum((s.values[i] or 0.0) for s in series) for i in range(len(labels))]
    y_max = _nice_max(max(totals, default=0.0))
    left = _left_pad(y_max, fmt)
    parts = _frame(labels, y_max, fmt, title, left)
    plot_h = H - PAD_T - PAD_B
    slot = (W - left - PAD_R) / max(len(labels), 1)
    bar_w = max(2.0, slot * 0.7)
    for i, label in enumerate(labels):
        base = 0.0
        x = left + slot * i + (slot - bar_w) / 2
        for s in series:
            v = s.values[i] or 0.0
            if v <= 0:
                continue
            h = plot_h * v / y_max
            y = PAD_T + plot_h - plot_h * base / y_max - h
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{h:.1f}" fill="{s.color}" rx="1">'
                f"<title>{escape(label)} · {escape(s.name)}: {escape(fmt(v))}</title></rect>"
            )
            base += v
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 (every interpolated text is escaped)


def line_chart(
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    y_max: float | None = None,
    fmt: Callable[[float], str] = _default_fmt,
) -> SafeString:
    peak = max((v for s in series for v in s.values if v is not None), default=0.0)
    top = y_max if y_max is not None else _nice_max(peak)
    left = _left_pad(top, fmt)
    parts = _frame(labels, top, fmt, title, left)
    plot_h = H - PAD_T - PAD_B
    slot = (W - left - PAD_R) / max(len(labels), 1)
    for s in series:
        points: list[tuple[float, float, float, str]] = []
        for i, v in enumerate(s.values):
            if v is None:
                continue
            x = left + slot * (i + 0.5)
            y = PAD_T + plot_h - plot_h * min(v, top) / top
            points.append((x, y, v, labels[i]))
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _, _ in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{s.color}" stroke-width="2"/>')
        for x, y, v, label in points:
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{s.color}">'
                f"<title>{escape(label)} · {escape(s.name)}: {escape(fmt(v))}</title></circle>"
            )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308
