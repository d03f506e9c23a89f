"""Keyset pagination for the dashboard's lists (the queue, the audit log): a page continues
strictly after the sort key of the previous page's last row, so a page deep in a million rows
is one index range scan, and rows inserted meanwhile neither repeat nor vanish.

A cursor is opaque to the browser: the order it was made for and the last row's values, as
URL-safe base64 JSON. A cursor that does not decode, or was made for another order (the sort
changed), is None, and the caller shows the first page."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Model, Q
from django.utils.dateparse import parse_datetime


def _parse_datetime(value: Any) -> datetime:
    when = parse_datetime(value)
    if when is None:
        raise ValueError(f"not a datetime: {value!r}")
    return when


def _parse_float(value: Any) -> float | None:
    return None if value is None else float(value)


PARSERS: dict[type, Callable[[Any], Any]] = {datetime: _parse_datetime, int: int, float: _parse_float}


@dataclass(frozen=True)
class Cursor:
    """The sort key of the last row of a page, for the order (Django order_by names) it was
    made in."""

    order: tuple[str, ...]
    values: tuple[Any, ...]

    def encode(self) -> str:
        raw = json.dumps(
            [",".join(self.order), *[v.isoformat() if isinstance(v, datetime) else v for v in self.values]]
        )
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, value: str, *, order: tuple[str, ...], types: Mapping[str, type]) -> Cursor | None:
        """`types`: the Python type of each sort field (datetime, int or float; float is the
        default and may be None)."""
        try:
            raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
            key, *values = json.loads(raw)
            if key != ",".join(order) or len(values) != len(order):
                return None
            names = (f.lstrip("-") for f in order)
            parsed = tuple(PARSERS[types.get(n, float)](v) for n, v in zip(names, values, strict=True))
            return cls(order, parsed)
        except (ValueError, TypeError, AttributeError, binascii.Error, UnicodeDecodeError):
            return None

    @classmethod
    def after(cls, row: Model, *, order: tuple[str, ...]) -> Cursor:
        return cls(order, tuple(getattr(row, f.lstrip("-")) for f in order))


def after_cursor_q(cursor: Cursor, *, nullable: frozenset[str] = frozenset()) -> Q:
    """Rows strictly after the cursor in its order. A leading field in `nullable` sorts its
    NULLs first when descending (PostgreSQL's default); later fields must not be nullable."""
    fields = [(f.lstrip("-"), f.startswith("-")) for f in cursor.order]
    name, desc = fields[0]
    first = cursor.values[0]
    if name in nullable:
        if not desc:
            raise ValueError(f"{name}: a nullable leading field is supported in descending order only")
        rest = _lexicographic_after(fields[1:], cursor.values[1:])
        if first is None:
            return Q(**{f"{name}__isnull": False}) | Q(**{f"{name}__isnull": True}) & rest
        # The redundant lte bound lets PostgreSQL start the index scan at the cursor.
        return Q(**{f"{name}__lte": first}) & (Q(**{f"{name}__lt": first}) | Q(**{name: first}) & rest)
    # The redundant bound on the leading column lets PostgreSQL start the index scan there.
    bound = Q(**{f"{name}__{'lte' if desc else 'gte'}": first})
    return bound & _lexicographic_after(fields, cursor.values)


def _lexicographic_after(fields: list[tuple[str, bool]], values: tuple[Any, ...]) -> Q:
    name, desc = fields[0]
    strictly = Q(**{f"{name}__{'lt' if desc else 'gt'}": values[0]})
    if len(fields) == 1:
        return strictly
    return strictly | Q(**{name: values[0]}) & _lexicographic_after(fields[1:], values[1:])
