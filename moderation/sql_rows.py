"""Model instances from SQL built once, for the few reads on the synchronous pre-publish path
(POST /api/v1/posts?wait_ms) where the ORM compiling the same queryset on every request cost
more than PostgreSQL answering it (py-spy/cProfile of benchmarks/e2e_load.py --only-sync:
~1 ms of Python per compiled queryset, ~0.1 ms for the statement itself).

The column list comes from the model's metadata and rows become instances exactly as the ORM
makes them: the same converters (from_db_value ...), Model.from_db. Values are always
parameters; only identifiers from metadata are formatted into the SQL."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Model

M = TypeVar("M", bound=Model)


@functools.cache
def _columns(model: type[Model], alias: str) -> tuple[str, list[Any], list[tuple[int, list[Any], Any]]]:
    """The select list of `model`'s concrete fields under `alias`, the fields, and the ORM's
    converters per column that has any (index, converters, Col)."""
    fields = list(model._meta.concrete_fields)
    qn = connection.ops.quote_name
    select = ", ".join(f"{alias}.{qn(str(f.column))}" for f in fields)
    converters = []
    for i, field in enumerate(fields):
        col = field.get_col(alias)
        found = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
        if found:
            converters.append((i, found, col))
    return select, fields, converters


def select_list(model: type[Model], alias: str) -> str:
    """`alias.col1, alias.col2, ...` for every concrete field of `model`, in field order."""
    return _columns(model, alias)[0]


def width(model: type[Model]) -> int:
    return len(model._meta.concrete_fields)


def instance(model: type[M], alias: str, values: Sequence[Any]) -> M | None:
    """The instance of one row's `select_list(model, alias)` values; None when the primary key is
    NULL (a LEFT JOIN that matched nothing)."""
    _, fields, converters = _columns(model, alias)
    row = list(values)
    if row[0] is None:
        return None
    for i, convert_all, col in converters:
        for convert in convert_all:
            row[i] = convert(row[i], col, connection)
    return model.from_db(connection.alias, [f.attname for f in fields], row)


@functools.cache
def _first_sql(model: type[Model], where: str) -> str:
    table = connection.ops.quote_name(model._meta.db_table)
    pk = connection.ops.quote_name(str(model._meta.pk.column))
    # Identifiers come from model metadata and the callers' literal conditions: no injection.
    return f"SELECT {select_list(model, 't')} FROM {table} t WHERE {where} ORDER BY t.{pk} LIMIT 1"  # noqa: S608


def select_first(model: type[M], *, where: str, params: Sequence[Any] = ()) -> M | None:
    """`model.objects.filter(...).first()` for a WHERE clause written over alias `t`, with
    `%s` placeholders for `params` (the first row by primary key, or None)."""
    with connection.cursor() as cursor:
        cursor.execute(_first_sql(model, where), list(params))
        row = cursor.fetchone()
    return None if row is None else instance(model, "t", row)


@functools.lru_cache(maxsize=1024)  # one text per WHERE clause; callers vary only IN-list lengths
def _all_sql(model: type[Model], where: str) -> str:
    table = connection.ops.quote_name(model._meta.db_table)
    # Identifiers come from model metadata and the callers' literal conditions: no injection.
    return f"SELECT {select_list(model, 't')} FROM {table} t WHERE {where}"  # noqa: S608


def select_all(model: type[M], *, where: str, params: Sequence[Any] = ()) -> list[M]:
    """`list(model.objects.filter(...))` for a WHERE clause written over alias `t`, with `%s`
    placeholders for `params` (no order)."""
    with connection.cursor() as cursor:
        cursor.execute(_all_sql(model, where), list(params))
        rows = cursor.fetchall()
    return [found for row in rows if (found := instance(model, "t", row)) is not None]


def in_list(count: int) -> str:
    """`%s, %s, ...`: the placeholders of an IN list of `count` values."""
    return ", ".join(["%s"] * count)
