"""Counter writes of the ingest path in one statement each, whatever the number of rows.

Counters go up in SQL (``post_count = post_count + n``) so concurrent ingests never lose an
increment. Plain SQL because the ORM has no upsert that adds to a column, and no multi-row
UPDATE with a value per row; written for PostgreSQL and SQLite >= 3.39 (the laptop default)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import connection, models


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
    changed. Returns the primary keys in the order of ``rows`` (RETURNING follows the VALUES
    order, as Django's bulk_create relies on too). Rows are written in the given order: callers
    sort them so two concurrent statements lock rows in the same order."""
    if not rows:
        return []
    model, meta = type(rows[0]), rows[0]._meta
    qn = connection.ops.quote_name
    columns = [f for f in meta.concrete_fields if not f.primary_key and f.column]
    params: list[Any] = []
    for row in rows:
        params.extend(f.get_db_prep_save(f.pre_save(row, add=True), connection) for f in columns)
    table = qn(meta.db_table)

    def col(name: str) -> str:
        return _column(model, name)

    updates = [f"{col(name)} = EXCLUDED.{col(name)}" for name in overwrite]
    updates.append(f"{col(counter)} = {table}.{col(counter)} + EXCLUDED.{col(counter)}")
    if touch is not None and overwrite:
        changed = " OR ".join(f"{table}.{col(n)} IS DISTINCT FROM EXCLUDED.{col(n)}" for n in overwrite)
        updates.append(f"{col(touch)} = CASE WHEN {changed} THEN EXCLUDED.{col(touch)} ELSE {table}.{col(touch)} END")
    row_sql = "(" + ", ".join(["%s"] * len(columns)) + ")"
    # Identifiers come from model metadata and every value is a parameter: no injection.
    sql = (
        f"INSERT INTO {table} ({', '.join(qn(str(f.column)) for f in columns)}) "  # noqa: S608
        f"VALUES {', '.join([row_sql] * len(rows))} "
        f"ON CONFLICT ({', '.join(col(name) for name in unique)}) DO UPDATE SET {', '.join(updates)} "
        f"RETURNING {_column(model)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        pks = [pk for (pk,) in cursor.fetchall()]
    if len(pks) != len(rows):
        raise RuntimeError(f"upsert of {len(rows)} {meta.label} rows returned {len(pks)} ids")
    return pks


def counters_add(*, model: type[models.Model], increments: Mapping[int, int], counter: str = "post_count") -> None:
    """``counter += increments[pk]`` for every pk, in one UPDATE (rows in primary-key order)."""
    if not increments:
        return
    meta = model._meta
    qn = connection.ops.quote_name
    pk, column = _column(model), _column(model, counter)
    pks = sorted(increments)
    cases = " ".join(["WHEN %s THEN %s"] * len(pks))
    sql = (
        f"UPDATE {qn(meta.db_table)} SET {column} = {column} + CASE {pk} {cases} END "  # noqa: S608
        f"WHERE {pk} IN ({', '.join(['%s'] * len(pks))})"
    )
    params: list[Any] = [v for p in pks for v in (p, increments[p])]
    params.extend(pks)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
