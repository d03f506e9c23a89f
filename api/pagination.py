from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request


class IdCursorPagination(CursorPagination):
    """Stable keyset pages over an ever-growing table (newest first).

    ``page_size`` is an integer in [1, max_page_size] or a 400: DRF's default silently ignores
    a bad value, which made the documented parameter a lie (schemathesis' negative mode sends
    one and expects a rejection)."""

    ordering = "-id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.getlist(self.page_size_query_param)
        if not raw:
            return self.page_size
        value = raw[-1]
        if len(raw) > 1 or not value.isascii() or not value.isdigit() or not 1 <= int(value) <= self.max_page_size:
            raise ValidationError(
                {self.page_size_query_param: [f"An integer from 1 to {self.max_page_size}."]}, code="invalid"
            )
        return int(value)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {"type": "integer", "minimum": 1, "maximum": self.max_page_size}
        return parameters
