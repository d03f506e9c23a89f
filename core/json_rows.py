"""Many rows as ONE query parameter on PostgreSQL: ``json_to_recordset(%s::json) AS r(...)``.

Why. Django's psycopg backend binds parameters client side: psycopg splits the query text at
its placeholders on every execution (cached only for short queries with at most 50 parameters)
and quotes each parameter in Python. A 32-post insert as ``VALUES (%s, ...), ...`` has ~600
placeholders: that splitting and quoting was the largest single cost of the batch ingest
request after validation (cProfile, benchmarks/ingest_profile.py), and PostgreSQL in turn
parses a 600-literal statement. Here the statement text is fixed per model and column set
(psycopg caches its conversion), the rows are one JSON text made by the C json encoder, and
PostgreSQL parses one literal. Fixed-shape SQL, built from model metadata only.

The values are the fields' ``pre_save`` values through ``get_prep_value``; the recordset
declares each column with its model's database type, so PostgreSQL converts the JSON text as
it converts a quoted literal of that type. Length limits (varchar(n)) are checked by the
INSERT, as before. Row order: INSERT ... SELECT FROM the recordset processes the rows in the
order sent and RETURNING follows it, the assumption Django's own UNNEST bulk_create makes."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

import orjson
from django.conf import settings
from django.db import connection, models

_TYPMOD = re.compile(r"\(.*\)")


def _default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(f"no JSON form for {type(value).__name__} in a json_rows column")


def column_fields(model: type[models.Model], names: Sequence[str] | None = None) -> list[models.Field]:
    """The concrete non-pk fields of `model` (or the fields `names`), in model order."""
    meta = model._meta
    if names is None:
        return [f for f in meta.concrete_fields if not f.primary_key and f.column]
    fields = [meta.get_field(n) for n in names]
    concrete = [f for f in fields if isinstance(f, models.Field) and f.column]
    if len(concrete) != len(fields):
        raise TypeError(f"{meta.label}: {list(names)} must be concrete fields")
    return concrete


def recordset(fields: Sequence[models.Field], alias: str = "r") -> str:
    """``json_to_recordset(%s::json) AS r("col" type, ...)``: one placeholder for all rows.
    The type without its modifier (varchar, not varchar(255)): the INSERT checks lengths."""
    return _recordset(tuple(fields), alias)


@functools.lru_cache(maxsize=256)
def _recordset(fields: tuple[models.Field, ...], alias: str) -> str:
    # Built once per field list: asking every field for its database type on each statement
    # was 4 % of a batch ingest request's CPU (py-spy).
    qn = connection.ops.quote_name
    columns = ", ".join(f"{qn(str(f.column))} {_TYPMOD.sub('', str(f.db_type(connection)))}" for f in fields)
    return f"json_to_recordset(%s::json) AS {alias}({columns})"


def rows_json(rows: Sequence[models.Model], fields: Sequence[models.Field], *, add: bool = True) -> str:
    """The parameter for `recordset(fields)`: one JSON object per row, keyed by column."""
    for f in fields:
        if isinstance(f, models.JSONField) and f.encoder is not None:
            raise TypeError(f"{f}: a JSONField with its own encoder is not supported here")
    # get_prep_value: the field's own conversion (float(), int(), IPv6 clean-up ...), as the
    # ORM applies before binding; JSON fields give their Python value, nested as is. A value
    # already of the type that conversion returns unchanged is taken as it is (_plain_type).
    columns = _columns(tuple(fields))
    aware = settings.USE_TZ
    payload = []
    for row in rows:
        values = {}
        for column, attname, plain, field in columns:
            value = getattr(row, attname)
            kind = type(value)
            # None is stored as None, but only by a plain field: pre_save may set it (auto_now).
            naive = kind is datetime and aware and value.utcoffset() is None
            if plain is not None and (value is None or (kind is plain and not naive)):
                values[column] = value
            else:
                values[column] = field.get_prep_value(field.pre_save(row, add))
        payload.append(values)
    # PostgreSQL's json has no NaN: fail here rather than store something else (orjson would
    # write null; the standard encoder raises the same ValueError with allow_nan=False). Only
    # floats and containers can hold one.
    suspects = [v for values in payload for v in values.values() if type(v) in _MAY_HOLD_NAN]
    if suspects and not _finite(suspects):
        raise ValueError("a NaN or infinite number has no JSON form")
    try:
        # orjson: the same JSON text as the standard encoder but 15x faster on the scoring
        # worker's Score rows (0.14 against 2.1 ms for 32 rows of features and contributions,
        # 10-13 % of the worker's CPU, py-spy); int keys become strings as json.dumps makes them.
        return orjson.dumps(payload, default=_default, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:  # what orjson does not take (an int beyond 64 bits ...)
        return json.dumps(payload, default=_default, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


_MAY_HOLD_NAN = frozenset({float, dict, list, tuple})

# Field classes whose pre_save reads the attribute and whose get_prep_value returns a value of
# this type unchanged (None too): the per-row, per-field method calls were a quarter of a batch
# ingest request's CPU (pyinstrument, benchmarks/ingest_profile.py --batch 32).
_PLAIN_TYPES: tuple[tuple[type[models.Field], type], ...] = (
    (models.CharField, str),
    (models.TextField, str),
    (models.IntegerField, int),
    (models.FloatField, float),
    (models.BooleanField, bool),
    (models.DateTimeField, datetime),  # aware (under USE_TZ): a naive one goes the field's way
)


def _plain_type(field: models.Field) -> type | None:
    """The type whose values `field` stores as they are, or None (always ask the field)."""
    cls: type[models.Field] = type(field)
    if isinstance(field, models.ForeignKey):
        same = cls.pre_save is models.Field.pre_save and cls.get_prep_value is models.ForeignKey.get_prep_value
        return _plain_type(field.target_field) if same else None
    for base, kind in _PLAIN_TYPES:
        if cls.get_prep_value is not base.get_prep_value:
            continue
        if cls.pre_save is models.Field.pre_save:
            return kind
        if cls.pre_save is models.DateTimeField.pre_save and isinstance(field, models.DateTimeField):
            # auto_now / auto_now_add set the value in pre_save
            return None if field.auto_now or field.auto_now_add else kind
        return None
    return None


@functools.lru_cache(maxsize=256)
def _columns(fields: tuple[models.Field, ...]) -> list[tuple[str, str, type | None, models.Field]]:
    return [(str(f.column), f.attname, _plain_type(f), f) for f in fields]


def _finite(value: Any) -> bool:
    """No NaN or infinity anywhere in `value` (nested dicts and lists). A container of plain
    numbers is summed at C speed: a finite sum proves every term finite."""
    kind = type(value)
    if kind is float:
        return math.isfinite(value)
    if kind is dict:
        items: Any = list(value.values())
    elif kind is list or kind is tuple:
        items = value
    else:
        return True
    try:
        total = sum(items)
    except TypeError:  # not all numbers: look at each
        return all(_finite(item) for item in items)
    return math.isfinite(total) or all(_finite(item) for item in items)  # an overflowing sum


def insert_rows(rows: Sequence[models.Model]) -> None:
    """INSERT new `rows` (one model, pk unset) in one statement and set their pks, as
    bulk_create does; on PostgreSQL through one JSON parameter (RETURNING follows the
    recordset's row order, as Django's UNNEST bulk_create relies on), elsewhere (and for a
    row holding a NaN or infinite float) through bulk_create."""
    if not rows:
        return
    model = type(rows[0])
    if connection.vendor != "postgresql":
        model._default_manager.bulk_create(rows)
        return
    fields = column_fields(model)
    try:
        param = rows_json(rows, fields)
    except ValueError:  # NaN or infinity: JSON has none, the ORM's own parameters carry them
        model._default_manager.bulk_create(rows)
        return
    qn = connection.ops.quote_name
    names = ", ".join(qn(str(f.column)) for f in fields)
    pk = qn(str(model._meta.pk.column))
    # Identifiers come from model metadata and the rows are one parameter: no injection.
    table = qn(model._meta.db_table)
    sql = f"INSERT INTO {table} ({names}) SELECT {names} FROM {recordset(fields)} RETURNING {pk}"  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql, [param])
        pks = [value for (value,) in cursor.fetchall()]
    if len(pks) != len(rows):
        raise RuntimeError(f"insert of {len(rows)} {model._meta.label} rows returned {len(pks)} ids")
    for row, value in zip(rows, pks, strict=True):
        row.pk = value
        row._state.adding = False
        row._state.db = connection.alias
