"""One JSON error shape for every API error:

    {"error": {"code": str, "message": str,
               "fields": {"author.external_id": ["This field is required."], ...},
               "details": [{"field": "author.external_id", "code": "required", "message": "..."}]}}

``fields`` maps a field path (``journey[3].at``) to its messages; ``details`` carries the same
errors with their machine-readable codes.

An error never echoes client input without bound: a key in a field path is clipped to
ECHO_MAX_CHARS, a message to MESSAGE_MAX_CHARS, both made encodable (a lone surrogate is shown as
``\\udc00``), and at most FIELD_ERRORS_MAX errors are listed; when more were found the body says
``"truncated": true``. So a 10 MB unknown key answers a few hundred bytes, and rendering an error
cannot fail.

A backing service that is down (PostgreSQL, the cache Redis) is answered 503 with code
"unavailable" and a Retry-After header, never a 500: clients retry, nothing is half-done (every
write is one transaction). The broker is not one of them: ingest stores the post and the
sweeper enqueues it later."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from itertools import islice
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import InterfaceError as DatabaseInterfaceError
from django.db import OperationalError as DatabaseOperationalError
from django.http import Http404
from redis.exceptions import RedisError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.errors import ApplicationError

logger = logging.getLogger(__name__)

NON_FIELD = "non_field_errors"
# Seconds a client should wait before retrying after a 503 (a restart or fail-over takes seconds).
RETRY_AFTER_S = 5
# Backing services whose outage is temporary: the request can be retried as it is.
UNAVAILABLE_ERRORS: tuple[type[Exception], ...] = (DatabaseOperationalError, DatabaseInterfaceError, RedisError)


# Characters of one client-supplied key echoed in a field path.
ECHO_MAX_CHARS = 64
# Characters of one message (DRF's messages may quote the input, e.g. a choice).
MESSAGE_MAX_CHARS = 256
# Errors listed in one response (or one batch item); the rest are counted as "truncated".
FIELD_ERRORS_MAX = 50


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (marked with an ellipsis) and made encodable as
    UTF-8: the renderer fails on a lone surrogate, and the error is the answer to such input."""
    if len(text) > limit:
        text = text[: limit - 1] + "\u2026"
    if not text.isascii():
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _join(prefix: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{prefix}[{key}]"
    if key == NON_FIELD and prefix:
        return prefix
    name = clip(str(key), ECHO_MAX_CHARS)
    return f"{prefix}.{name}" if prefix else name


def _leaves(detail: Any, prefix: str) -> Iterator[tuple[str, str, str]]:
    if isinstance(detail, dict):
        for key, value in detail.items():
            yield from _leaves(value, _join(prefix, key))
    elif isinstance(detail, list):
        for index, item in enumerate(detail):
            yield from _leaves(item, _join(prefix, index) if isinstance(item, dict | list) else prefix)
    else:
        code = clip(str(getattr(detail, "code", None) or "invalid"), ECHO_MAX_CHARS)
        yield (prefix or NON_FIELD, code, clip(str(detail), MESSAGE_MAX_CHARS))


def flatten_errors(detail: Any, limit: int = FIELD_ERRORS_MAX) -> tuple[list[tuple[str, str, str]], bool]:
    """(field path, code, message) for the first ``limit`` leaves of a DRF error structure, and
    whether there were more."""
    leaves = _leaves(detail, "")
    errors = list(islice(leaves, limit))
    return errors, next(leaves, None) is not None


def fields_of(errors: list[tuple[str, str, str]]) -> dict[str, list[str]]:
    fields: dict[str, list[str]] = {}
    for path, _, message in errors:
        fields.setdefault(path, []).append(message)
    return fields


def error_body(
    code: str,
    message: str,
    fields: dict[str, list[str]] | None = None,
    details: list[dict[str, str]] | None = None,
    *,
    truncated: bool = False,
) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": clip(message, MESSAGE_MAX_CHARS), "fields": fields or {}}
    if details is not None:
        body["details"] = details
    if truncated:
        body["truncated"] = True
    return {"error": body}


def validation_error_body(detail: Any) -> dict[str, Any]:
    errors, truncated = flatten_errors(detail)
    codes = {code for _, code, _ in errors}
    # Bad unicode gets its own top-level code: clients usually fix it in one place (encoding).
    code = "invalid_unicode" if codes == {"invalid_unicode"} else "invalid"
    details = [{"field": path, "code": c, "message": m} for path, c, m in errors]
    return error_body(code, "The request is not valid.", fields_of(errors), details, truncated=truncated)


def application_error_body(exc: ApplicationError) -> dict[str, Any]:
    """An ApplicationError's body; its ``fields`` may quote input too, so they are clipped."""
    errors, truncated = flatten_errors(exc.fields)
    body = error_body(exc.code, exc.message, fields_of(errors), truncated=truncated)
    body["error"].update(exc.extra)
    return body


def unavailable_response(exc: Exception) -> Response:
    logger.warning("api.service_unavailable error=%s: %s", type(exc).__name__, exc)
    response = Response(
        error_body("unavailable", "A backing service is temporarily unavailable; retry later."),
        status=status.HTTP_503_SERVICE_UNAVAILABLE,
    )
    response["Retry-After"] = str(RETRY_AFTER_S)
    return response


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, UNAVAILABLE_ERRORS):
        return unavailable_response(exc)
    if isinstance(exc, ApplicationError):
        return Response(application_error_body(exc), status=exc.status_code)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        response.data = validation_error_body(exc.detail)
        response.status_code = status.HTTP_400_BAD_REQUEST
    elif isinstance(exc, exceptions.APIException):
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else exc.default_code
        response.data = error_body(str(code), str(exc.detail))
    return response
