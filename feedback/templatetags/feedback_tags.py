"""Formatting helpers for the ML pages."""

from __future__ import annotations

from typing import Any

from django import template

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
def signed(value: Any, digits: int = 3) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return ""
    return f"{value:+.{digits}f}" if isinstance(value, float) else f"{value:+d}"


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    return mapping.get(key) if isinstance(mapping, dict) else None
