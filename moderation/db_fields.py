"""Model fields tuned for the hot write paths."""

from __future__ import annotations

from typing import Any

from django.db import models


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
