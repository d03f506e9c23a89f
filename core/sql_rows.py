"""Model instances from SQL built once, for the few reads on the synchronous pre-publish path
(POST /api/v1/posts?wait_ms) where the ORM compiling the same queryset on every request cost
more than PostgreSQL answering it (py-spy/cProfile of benchmarks/e2e_load.py --only-sync:
~1 ms of Python per compiled queryset, ~0.1 ms for the statement itself).

The column list comes from the model's metadata and rows become instances as the ORM makes
them: the same converters (from_db_value ...), the same attributes and _state. Values are always
parameters; only identifiers from metadata are formatted into the SQL."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, TypeVar

from django.conf import settings
from django.db import connection
from django.db.models import Model
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init

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


@functools.cache
def _attnames(model: type[Model]) -> tuple[str, ...]:
    return tuple(f.attname for f in model._meta.concrete_fields)


def _needs_from_db(model: type[Model]) -> bool:
    return (
        pre_init.has_listeners(model)
        or post_init.has_listeners(model)
        or model.__init__ is not Model.__init__
        or model.from_db.__func__ is not Model.from_db.__func__  # type: ignore[attr-defined]
    )


def _built(model: type[M], row: list[Any]) -> M:
    """What Model.from_db returns for a row of every concrete field, without Model.__init__.

    Why: the scoring load builds ten instances per post (the post and what it joins), and
    __init__'s per-field descriptor calls and its pre_init/post_init signals cost about five
    times the attributes themselves (7.6 against 1.6 us for a Post). With every concrete field
    loaded, __init__ only sets each attname, and from_db then marks the state as loaded from
    the database: done here directly. A model something listens to at init (pre_init or
    post_init: an ImageField's dimensions, a project receiver) goes
    through from_db, so those listeners still run, as does a model with its own __init__ or
    from_db (Django's documented way to track changes) (tests/core/test_sql_rows.py)."""
    if _needs_from_db(model):
        return model.from_db(connection.alias, list(_attnames(model)), row)
    obj = model.__new__(model)
    state = ModelState()
    state.adding = False
    state.db = connection.alias
    obj._state = state
    obj.__dict__.update(zip(_attnames(model), row, strict=True))
    return obj


def select_list(model: type[Model], alias: str) -> str:
    """`alias.col1, alias.col2, ...` for every concrete field of `model`, in field order."""
    return _columns(model, alias)[0]


def width(model: type[Model]) -> int:
    return len(model._meta.concrete_fields)


def instance(model: type[M], alias: str, values: Sequence[Any]) -> M | None:
    """The instance of one row's `select_list(model, alias)` values; None when the primary key is
    NULL (a LEFT JOIN that matched nothing)."""
    converters = _columns(model, alias)[2]
    row = list(values)
    if row[0] is None:
        return None
    for i, convert_all, col in converters:
        for convert in convert_all:
            row[i] = convert(row[i], col, connection)
    return _built(model, row)


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


def fetch_all_prepared(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Run a read whose text repeats (built once from metadata) and fetch its rows; on
    PostgreSQL as a server-side prepared statement (settings.DB_PREPARED_READS), so that
    PostgreSQL plans it once per connection instead of on every run.

    Why only here: Django binds parameters client side and turns psycopg's automatic
    preparation off (for connection poolers), so every statement is new text to plan. For the
    scoring load (six joins, five subqueries) planning took 1.9 ms against 1.4 ms of execution
    for a batch of 32 (EXPLAIN ANALYZE), on every batch and every inline pre-publish check.
    The cursor is Django's own server-binding class wrapped as Django wraps its cursors (same
    error translation, query log and execute wrappers); integers go as int8 so that the
    statement's parameter types do not change with the values. A deployment behind a pooler
    in transaction mode without prepared-statement support sets DB_PREPARED_READS=false."""
    if connection.vendor != "postgresql" or not settings.DB_PREPARED_READS:
        with connection.cursor() as cursor:
            cursor.execute(sql, list(params))
            rows: list[tuple[Any, ...]] = cursor.fetchall()
            return rows
    from psycopg.types.numeric import Int8

    connection.ensure_connection()
    connection.validate_thread_sharing()
    psycopg_connection = connection.connection
    if psycopg_connection.prepare_threshold is None:
        # Django opens connections with preparation off (None); any number lets this cursor
        # prepare. Django's own cursors bind client side and never prepare, whatever it says.
        psycopg_connection.prepare_threshold = 5
    with connection.wrap_database_errors:
        raw = _preparing_cursor_class()(psycopg_connection)
    wrapped = connection.make_debug_cursor(raw) if connection.queries_logged else connection.make_cursor(raw)
    values = [Int8(v) if type(v) is int else v for v in params]
    with wrapped as cursor:
        cursor.execute(sql, values)
        prepared: list[tuple[Any, ...]] = cursor.fetchall()
        return prepared


@functools.cache
def _preparing_cursor_class() -> Any:
    """Django's server-binding cursor, preparing every statement it runs (psycopg keeps the
    prepared statements per connection, keyed by text and parameter types)."""
    from django.db.backends.postgresql.base import ServerBindingCursor

    base: Any = ServerBindingCursor  # django-stubs types it as a wrapper; it is psycopg's Cursor

    class PreparingCursor(base):
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            kwargs.setdefault("prepare", True)
            return super().execute(query, params, **kwargs)

    return PreparingCursor
