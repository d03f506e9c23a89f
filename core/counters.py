"""Counter writes of the ingest path in one statement each, whatever the number of rows.

Counters go up in SQL (``post_count = post_count + n``) so concurrent ingests never lose an
increment. Plain SQL because the ORM has no upsert that adds to a column, and no multi-row
UPDATE with a value per row; written for PostgreSQL and SQLite >= 3.39 (the laptop default).
On PostgreSQL the upsert's rows travel as one JSON parameter (core.json_rows).

Lock order. Every writer of the counter rows (authors, links, domains, IPs) takes its row
locks in ascending primary key, table by table (authors -> links -> domains -> IPs), so two
concurrent writers wait for each other instead of deadlocking. A multi-row UPDATE locks rows
in scan order and an INSERT ... ON CONFLICT in VALUES order (the unique key, not the pk), so
on PostgreSQL both lock explicitly first: counters_add inside its one statement (a CTE
``SELECT ... ORDER BY pk FOR NO KEY UPDATE``, no extra round trip), upsert_counting with one
locking SELECT of the rows that exist already, only when it writes more than one row (a
single row has no order to get wrong, so the one-post ingest path costs nothing more).
Rows the upsert creates are invisible to other transactions until commit, so only the
existing ones need the ordered lock. SQLite locks the whole database: nothing to order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    that exist already are first locked in primary-key order (one SELECT ... FOR NO KEY
    UPDATE), the order every counter writer uses; callers sort ``rows`` on ``unique`` so that
    concurrent inserts of the same new rows also wait in one order."""
    if not rows:
        return []
    model, meta = type(rows[0]), rows[0]._meta
    qn = connection.ops.quote_name
    columns = column_fields(model)
    table = qn(meta.db_table)
    postgresql = connection.vendor == "postgresql"
    if len(rows) > 1 and postgresql:
        _lock_existing(rows=rows, unique=unique)

    def col(name: str) -> str:
        return _column(model, name)

    updates = [f"{col(name)} = EXCLUDED.{col(name)}" for name in overwrite]
    updates.append(f"{col(counter)} = {table}.{col(counter)} + EXCLUDED.{col(counter)}")
    if touch is not None and overwrite:
        changed = " OR ".join(f"{table}.{col(n)} IS DISTINCT FROM EXCLUDED.{col(n)}" for n in overwrite)
        updates.append(f"{col(touch)} = CASE WHEN {changed} THEN EXCLUDED.{col(touch)} ELSE {table}.{col(touch)} END")
    names = ", ".join(qn(str(f.column)) for f in columns)
    params: list[Any]
    if postgresql:
        # All rows as one JSON parameter (core.json_rows): a fixed statement text
        # instead of one placeholder per value. RETURNING follows the recordset's row order.
        source = f"SELECT {names} FROM {recordset(columns)}"  # noqa: S608
        params = [rows_json(rows, columns)]
    else:
        row_sql = "(" + ", ".join(["%s"] * len(columns)) + ")"
        source = f"VALUES {', '.join([row_sql] * len(rows))}"
        params = [f.get_db_prep_save(f.pre_save(row, add=True), connection) for row in rows for f in columns]
    # Identifiers come from model metadata and every value is a parameter: no injection.
    sql = (
        f"INSERT INTO {table} ({names}) {source} "
        f"ON CONFLICT ({', '.join(col(name) for name in unique)}) DO UPDATE SET {', '.join(updates)} "
        f"RETURNING {_column(model)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        pks = [pk for (pk,) in cursor.fetchall()]
    if len(pks) != len(rows):
        raise RuntimeError(f"upsert of {len(rows)} {meta.label} rows returned {len(pks)} ids")
    return pks


def _lock_existing(*, rows: Sequence[models.Model], unique: Sequence[str]) -> None:
    """Lock the rows among ``rows`` that exist already (matched on ``unique``) in primary-key
    order, before an upsert that would lock them in VALUES order (see the module docstring).
    FOR NO KEY UPDATE: the lock the upsert's DO UPDATE takes (it changes no key column), so
    it does not block the FOR KEY SHARE of foreign-key checks (posts inserted meanwhile)."""
    model, meta = type(rows[0]), rows[0]._meta
    fields = [meta.get_field(name) for name in unique]
    concrete = [f for f in fields if isinstance(f, models.Field) and f.column]
    if len(concrete) != len(fields):
        raise TypeError(f"{meta.label}: unique fields {list(unique)} must be concrete")
    params: list[Any] = []
    for row in rows:
        params.extend(f.get_db_prep_save(f.pre_save(row, add=True), connection) for f in concrete)
    one = "(" + ", ".join(["%s"] * len(concrete)) + ")"
    pk = _column(model)
    # Identifiers come from model metadata and every value is a parameter: no injection.
    sql = (
        f"SELECT {pk} FROM {connection.ops.quote_name(meta.db_table)} "  # noqa: S608
        f"WHERE ({', '.join(_column(model, name) for name in unique)}) IN ({', '.join([one] * len(rows))}) "
        f"ORDER BY {pk} FOR NO KEY UPDATE"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def counters_add(*, model: type[models.Model], increments: Mapping[int, int], counter: str = "post_count") -> None:
    """``counter += increments[pk]`` for every pk, in one UPDATE that locks its rows in
    primary-key order (a plain multi-row UPDATE locks them in scan order, which a bitmap heap
    scan makes physical order; see the module docstring)."""
    if not increments:
        return
    meta = model._meta
    qn = connection.ops.quote_name
    table, pk, column = qn(meta.db_table), _column(model), _column(model, counter)
    pks = sorted(increments)
    cases = " ".join(["WHEN %s THEN %s"] * len(pks))
    in_list = ", ".join(["%s"] * len(pks))
    params: list[Any] = []
    if connection.vendor == "postgresql":
        # The CTE's LockRows runs above its sort, so rows are locked in pk order; the UPDATE
        # only touches rows the CTE returned, i.e. rows this transaction holds already.
        sql = (
            f"WITH locked AS (SELECT {pk} FROM {table} WHERE {pk} IN ({in_list}) "  # noqa: S608
            f"ORDER BY {pk} FOR NO KEY UPDATE) "
            f"UPDATE {table} SET {column} = {table}.{column} + CASE {table}.{pk} {cases} END "
            f"FROM locked WHERE {table}.{pk} = locked.{pk}"
        )
        params.extend(pks)
        params.extend(v for p in pks for v in (p, increments[p]))
    else:
        sql = (
            f"UPDATE {table} SET {column} = {column} + CASE {pk} {cases} END "  # noqa: S608
            f"WHERE {pk} IN ({in_list})"
        )
        params.extend(v for p in pks for v in (p, increments[p]))
        params.extend(pks)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
