"""Counter writes of the ingest path in one statement each, whatever the number of rows.

Counters go up in SQL (``post_count = post_count + n``) so concurrent ingests never lose an
increment. Plain SQL because the ORM has no upsert that adds to a column, and no multi-row
UPDATE with a value per row; written for PostgreSQL and SQLite >= 3.39 (the laptop default).
On PostgreSQL the upsert's rows travel as one JSON parameter (core.json_rows).

Lock order. Every writer of the counter rows (authors, links, domains, IPs) takes its row
locks in ascending primary key, table by table (authors -> links -> domains -> IPs), so two
concurrent writers wait for each other instead of deadlocking. A multi-row UPDATE locks rows
in scan order and an INSERT ... ON CONFLICT in VALUES order (the unique key, not the pk), so
on PostgreSQL both lock explicitly first, inside their one statement: counters_add with a CTE
``SELECT ... ORDER BY pk FOR NO KEY UPDATE``, upsert_counting (more than one row) with the
same CTE over the rows that exist already, run as an InitPlan that gates the INSERT, so the
locks are all taken before the first row is inserted (a single row has no order to get wrong,
so the one-post ingest path skips it). Rows the upsert creates are invisible to other
transactions until commit, so only the existing ones need the ordered lock. SQLite locks the
whole database: nothing to order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, models

from core.json_rows import column_fields, recordset, rows_json


def _column(model: type[models.Model], name: str | None = None) -> str:
    """The quoted column of field ``name`` (default: the primary key)."""
    field = model._meta.pk if name is None else model._meta.get_field(name)
    if not isinstance(field, models.Field) or not field.column:
        raise TypeError(f"{model.__name__}.{name} is not a concrete field")
    return connection.ops.quote_name(field.column)


def upsert_counting(
    *,
    rows: Sequence[models.Model],
    unique: Sequence[str],
    overwrite: Sequence[str] = (),
    counter: str = "post_count",
    touch: str | None = None,
) -> list[int]:
    """INSERT ``rows`` (all of one model, distinct on ``unique``); a row that exists already gets
    the ``overwrite`` fields of its new version and its ``counter`` raised by the new row's
    ``counter`` value. ``touch`` (an auto_now field) moves only when an overwritten value
    changed. Returns the primary keys in the order of ``rows`` (RETURNING follows the order of
    the rows sent, as Django's bulk_create relies on too; on PostgreSQL they are sent as one
    JSON parameter, core.json_rows). On PostgreSQL, more than one row: the rows
    that exist already are first locked in primary-key order (FOR NO KEY UPDATE, in the same
    statement, see the module docstring), the order every counter writer uses; callers sort
    ``rows`` on ``unique`` so that concurrent inserts of the same new rows also wait in one
    order."""
    if not rows:
        return []
    upsert = Upsert(rows=rows, unique=unique, overwrite=overwrite, counter=counter, touch=touch)
    if connection.vendor == "postgresql":
        with_parts, insert, params = _upsert_postgresql(upsert, alias="v")
        sql = f"WITH {', '.join(with_parts)} {insert}" if with_parts else insert
    else:
        sql, params = _upsert_sqlite(upsert)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        pks = [pk for (pk,) in cursor.fetchall()]
    if len(pks) != len(rows):
        raise RuntimeError(f"upsert of {len(rows)} {rows[0]._meta.label} rows returned {len(pks)} ids")
    return pks


@dataclass(frozen=True)
class Upsert:
    """One upsert_counting call's arguments, for upserts_counting."""

    rows: Sequence[models.Model]
    unique: Sequence[str]
    overwrite: Sequence[str] = ()
    counter: str = "post_count"
    touch: str | None = None


def upserts_counting(upserts: Sequence[Upsert]) -> None:
    """Several upsert_counting calls (without their returned keys) in ONE statement on
    PostgreSQL, run one after the other in the order given, each locking the rows it updates
    first as upsert_counting does: the counters of several tables for one round trip. The order
    is the statement's: its select list reads each upsert's count in turn (an InitPlan each,
    evaluated left to right), and an upsert's gate, its ordered lock, runs when it starts, after
    the previous upsert finished. Elsewhere, one upsert_counting after the other."""
    todo = [u for u in upserts if u.rows]
    if not todo:
        return
    if connection.vendor != "postgresql":
        for u in todo:
            upsert_counting(rows=u.rows, unique=u.unique, overwrite=u.overwrite, counter=u.counter, touch=u.touch)
        return
    with_parts: list[str] = []
    params: list[Any] = []
    for i, u in enumerate(todo):
        parts, insert, values = _upsert_postgresql(u, alias=f"v{i}")
        with_parts += [*parts, f"u{i} AS ({insert})"]
        params += values
    counts = ", ".join(f"(SELECT count(*) FROM u{i})" for i in range(len(todo)))  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {', '.join(with_parts)} SELECT {counts}", params)
        written = cursor.fetchone()
    expected = tuple(len(u.rows) for u in todo)
    if tuple(written) != expected:
        raise RuntimeError(f"upserts of {expected} rows wrote {tuple(written)}")


def _upsert_clauses(u: Upsert) -> tuple[str, str, str]:
    """(table, column list, ON CONFLICT ... RETURNING pk) of an upsert."""
    model = type(u.rows[0])
    qn = connection.ops.quote_name
    table = qn(model._meta.db_table)

    def col(name: str) -> str:
        return _column(model, name)

    updates = [f"{col(name)} = EXCLUDED.{col(name)}" for name in u.overwrite]
    updates.append(f"{col(u.counter)} = {table}.{col(u.counter)} + EXCLUDED.{col(u.counter)}")
    if u.touch is not None and u.overwrite:
        changed = " OR ".join(f"{table}.{col(n)} IS DISTINCT FROM EXCLUDED.{col(n)}" for n in u.overwrite)
        touch = col(u.touch)
        updates.append(f"{touch} = CASE WHEN {changed} THEN EXCLUDED.{touch} ELSE {table}.{touch} END")
    names = ", ".join(qn(str(f.column)) for f in column_fields(model))
    conflict = (
        f"ON CONFLICT ({', '.join(col(name) for name in u.unique)}) DO UPDATE SET {', '.join(updates)} "
        f"RETURNING {_column(model)}"
    )
    return table, names, conflict


def _upsert_postgresql(u: Upsert, *, alias: str) -> tuple[list[str], str, list[Any]]:
    """(WITH-clause entries, the INSERT, its parameters) of an upsert on PostgreSQL. All rows
    are one JSON parameter (core.json_rows): a fixed statement text instead of one placeholder
    per value. More than one row: the rows among them that exist already are locked in
    primary-key order by an InitPlan that gates the INSERT's source (a one-time filter), so
    PostgreSQL takes every lock before it inserts the first row, with no round trip of its own
    (see the module docstring). FOR NO KEY UPDATE: the lock the upsert's DO UPDATE takes (it
    changes no key column), so it does not block the FOR KEY SHARE of foreign-key checks (posts
    inserted meanwhile). The recordset's CTE is read twice, so PostgreSQL materializes it and
    the INSERT reads its rows in the order sent, which RETURNING follows."""
    model = type(u.rows[0])
    table, names, conflict = _upsert_clauses(u)
    columns = column_fields(model)
    params: list[Any] = [rows_json(u.rows, columns)]
    # Identifiers come from model metadata and every value is a parameter: no injection.
    rows_sql = f"SELECT {names} FROM {recordset(columns)}"  # noqa: S608
    if len(u.rows) == 1:
        return [], f"INSERT INTO {table} ({names}) {rows_sql} {conflict}", params
    pk = _column(model)
    match = " AND ".join(f"t.{_column(model, name)} = {alias}.{_column(model, name)}" for name in u.unique)
    locked = f"{alias}_locked"
    with_parts = [
        f"{alias} AS ({rows_sql})",
        f"{locked} AS (SELECT t.{pk} FROM {table} t JOIN {alias} ON {match} ORDER BY t.{pk} FOR NO KEY UPDATE OF t)",  # noqa: S608
    ]
    insert = (
        f"INSERT INTO {table} ({names}) SELECT {names} FROM {alias} "  # noqa: S608
        f"WHERE (SELECT count(*) FROM {locked}) >= 0 {conflict}"
    )
    return with_parts, insert, params


def _upsert_sqlite(u: Upsert) -> tuple[str, list[Any]]:
    table, names, conflict = _upsert_clauses(u)
    columns = column_fields(type(u.rows[0]))
    row_sql = "(" + ", ".join(["%s"] * len(columns)) + ")"
    params = [f.get_db_prep_save(f.pre_save(row, add=True), connection) for row in u.rows for f in columns]
    # Identifiers come from model metadata and every value is a parameter: no injection.
    values = ", ".join([row_sql] * len(u.rows))
    return f"INSERT INTO {table} ({names}) VALUES {values} {conflict}", params  # noqa: S608


def counters_add(*, model: type[models.Model], increments: Mapping[int, int], counter: str = "post_count") -> None:
    """``counter += increments[pk]`` for every pk, in one UPDATE that locks its rows in
    primary-key order (a plain multi-row UPDATE locks them in scan order, which a bitmap heap
    scan makes physical order; see the module docstring)."""
    counters_add_together([CounterAdd(model=model, increments=increments, counter=counter)])


@dataclass(frozen=True)
class CounterAdd:
    """``counter += n`` for each row ``increments`` names: by primary key (``key`` empty,
    ``increments`` pk -> n), or by the fields ``key`` (``increments`` (value, ...) -> n)."""

    model: type[models.Model]
    increments: Mapping[Any, int]
    counter: str = "post_count"
    key: tuple[str, ...] = ()


def counters_add_together(adds: Sequence[CounterAdd]) -> None:
    """Several counters_add in ONE statement on PostgreSQL, one after the other in the order
    given, each locking its rows in primary-key order first (see the module docstring): the
    select list reads each UPDATE's count in turn (an InitPlan each, evaluated left to right),
    so a table's locks are taken after the previous table's UPDATE finished, the order every
    counter writer uses. Elsewhere one UPDATE per table."""
    todo = [a for a in adds if a.increments]
    if not todo:
        return
    if connection.vendor != "postgresql":
        for a in todo:
            with connection.cursor() as cursor:
                cursor.execute(*_counter_add_sqlite(a))
        return
    with_parts: list[str] = []
    params: list[Any] = []
    updates: list[str] = []
    for i, a in enumerate(todo):
        lock, update, lock_params, update_params = _counter_add_postgresql(a, locked=f"l{i}")
        with_parts.append(lock)
        params += lock_params
        updates.append(update)
        params += update_params
        if len(todo) > 1:
            with_parts.append(f"c{i} AS ({update} RETURNING 1)")
    if len(todo) == 1:
        sql = f"WITH {with_parts[0]} {updates[0]}"
    else:
        counts = ", ".join(f"(SELECT count(*) FROM c{i})" for i in range(len(todo)))  # noqa: S608
        sql = f"WITH {', '.join(with_parts)} SELECT {counts}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def _counter_key(a: CounterAdd) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The quoted key columns and the sorted key tuples of `a`."""
    if not a.key:
        return [_column(a.model)], [(k,) for k in sorted(a.increments)]
    return [_column(a.model, name) for name in a.key], [tuple(k) for k in sorted(a.increments)]


def _counter_add_postgresql(a: CounterAdd, *, locked: str) -> tuple[str, str, list[Any], list[Any]]:
    """(the locking CTE named `locked`, the UPDATE, their parameters). The CTE's LockRows runs
    above its sort, so rows are locked in pk order; the UPDATE only touches rows the CTE
    returned, i.e. rows this transaction holds already."""
    table, pk, column = connection.ops.quote_name(a.model._meta.db_table), _column(a.model), _column(a.model, a.counter)
    columns, keys = _counter_key(a)
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    match = " AND ".join(f"{table}.{c} = %s" for c in columns)
    cases = " ".join([f"WHEN {match} THEN %s"] * len(keys))
    # Identifiers come from model metadata and every value is a parameter: no injection.
    lock = (
        f"{locked} AS (SELECT {pk} FROM {table} WHERE ({', '.join(columns)}) IN ({', '.join([one] * len(keys))}) "  # noqa: S608
        f"ORDER BY {pk} FOR NO KEY UPDATE)"
    )
    update = (
        f"UPDATE {table} SET {column} = {table}.{column} + CASE {cases} ELSE 0 END "  # noqa: S608
        f"FROM {locked} WHERE {table}.{pk} = {locked}.{pk}"
    )
    increments = a.increments
    case_params = [v for k in keys for v in (*k, increments[k if a.key else k[0]])]
    return lock, update, [v for k in keys for v in k], case_params


def _counter_add_sqlite(a: CounterAdd) -> tuple[str, list[Any]]:
    table, column = connection.ops.quote_name(a.model._meta.db_table), _column(a.model, a.counter)
    columns, keys = _counter_key(a)
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    match = " AND ".join(f"{c} = %s" for c in columns)
    cases = " ".join([f"WHEN {match} THEN %s"] * len(keys))
    sql = (
        f"UPDATE {table} SET {column} = {column} + CASE {cases} ELSE 0 END "  # noqa: S608
        f"WHERE ({', '.join(columns)}) IN ({', '.join([one] * len(keys))})"
    )
    case_params = [v for k in keys for v in (*k, a.increments[k if a.key else k[0]])]
    return sql, case_params + [v for k in keys for v in k]
