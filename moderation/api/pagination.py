from __future__ import annotations

from rest_framework.pagination import CursorPagination


class IdCursorPagination(CursorPagination):
    """Stable keyset pages over an ever-growing table (newest first)."""

    ordering = "-id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 500
