"""Model fields tuned for the hot write paths."""

from __future__ import annotations

import functools
from typing import Any

from django.db import models
from django.db.models.fields.json import KeyTransform


class RowJSONField(models.JSONField):
    """A JSONField that Django bulk-inserts as one placeholder per row, not through UNNEST.

    Django 5.2 turns a multi-row bulk_create on PostgreSQL into `UNNEST(%s::jsonb[], ...)`, one
    array parameter per column. With psycopg's client-side binding (Django's default) an array
    of JSON strings is escaped element by element in Python: 1.6 ms for 32 values of 780
    characters against 0.03 ms as 32 plain parameters (measured here), and py-spy put that
    escaping at about a quarter of the scoring worker's busy time (benchmarks/RESULTS.md).
    Defining get_placeholder is Django's documented opt-out of the UNNEST path; the column
    type and the stored values are those of a plain JSONField.
    """

    def get_placeholder(self, value: Any, compiler: Any, connection: Any) -> str:
        return "%s"


class StoredJSONField(RowJSONField):
    """A JSONField kept in PostgreSQL's `json` type (the text as written), not `jsonb`.

    For JSON that is written once per row and read back whole, never queried inside: Score's
    features and contributions. Building jsonb parses every value into its binary form on
    insert; json only checks the text. Inserting the rows of real scored posts through the
    worker's json_to_recordset statement cost 0.14 ms of PostgreSQL CPU a row as jsonb and
    0.07 as json (benchmarks/RESULTS.md). What json gives up: containment and key
    operators (`@>`, `?`), GIN indexes and equality, which no code path needs here. So that a
    queryset filter on such a column still works (an admin search, an investigation in the
    shell), its lookups and key transforms read the column cast to jsonb on PostgreSQL: correct,
    and paying the parse only in the query that asks.

    Reading: Django makes psycopg return jsonb as text and decodes it in from_db_value;
    moderation.receivers.json_as_text gives json the same text loader, so both decode alike. Other
    databases keep JSONField's own column type."""

    def db_type(self, connection: Any) -> str | None:
        if connection.vendor == "postgresql":
            return "json"
        return super().db_type(connection)

    def get_lookup(self, lookup_name: str) -> Any:
        lookup: Any = super().get_lookup(lookup_name)
        return None if lookup is None else _on_jsonb(lookup)

    def get_transform(self, name: str) -> Any:
        transform = super().get_transform(name)
        if transform is None or isinstance(transform, type):  # a registered transform class
            return transform
        return functools.partial(_JsonbKeyTransform, name)  # a key: JSONField's KeyTransformFactory


def _jsonb(sql: str, connection: Any) -> str:
    return f"({sql})::jsonb" if connection.vendor == "postgresql" else sql


@functools.cache
def _on_jsonb(lookup: Any) -> Any:
    """`lookup` reading its left-hand side (the json column) as jsonb."""

    class JsonbLookup(lookup):  # a subclass of the Lookup class JSONField returned
        def process_lhs(self, compiler: Any, connection: Any, lhs: Any = None) -> tuple[str, Any]:
            sql, params = super().process_lhs(compiler, connection, lhs)
            return _jsonb(sql, connection), params

    JsonbLookup.__name__ = JsonbLookup.__qualname__ = f"Jsonb{lookup.__name__}"
    return JsonbLookup


class _JsonbKeyTransform(KeyTransform):
    """features__link__url_length: the path applied to the column cast to jsonb, so the
    lookups registered on KeyTransform (exact, lt, in ...) get the jsonb they are written for."""

    def preprocess_lhs(self, compiler: Any, connection: Any) -> tuple[str, Any, list[str]]:
        lhs, params, keys = super().preprocess_lhs(compiler, connection)
        return _jsonb(lhs, connection), params, keys
