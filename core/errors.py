"""Domain errors. The API's exception handler turns every ApplicationError into the one JSON
error shape: {"error": {"code": ..., "message": ..., "fields": {...}}}."""

from __future__ import annotations

from typing import Any


class ApplicationError(Exception):
    code = "application_error"
    status_code = 400

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        fields: dict[str, list[str]] | None = None,
        extra: dict[str, Any] | None = None,
    ):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.fields = fields or {}
        # Machine-readable members added to the error object next to code/message/fields
        # (a 409's stored id, say); never client input.
        self.extra = extra or {}


class NotFound(ApplicationError):
    code = "not_found"
    status_code = 404


class Forbidden(ApplicationError):
    code = "forbidden"
    status_code = 403


class Conflict(ApplicationError):
    code = "conflict"
    status_code = 409


class InvalidTransition(ApplicationError):
    code = "invalid_transition"
    status_code = 409


class PostContentConflict(Conflict):
    """An external_id already stored for this source, sent again with other content."""

    code = "idempotency_conflict"
