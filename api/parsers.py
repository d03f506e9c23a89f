"""A strict JSON parser: bounded body size, strict UTF-8 (overlong forms and encoded surrogates
are invalid UTF-8), no NaN/Infinity, no lone surrogate or NUL in an object key. Every client
mistake becomes a 4xx in the one error shape, never a 500.

Lone surrogates and NUL in string *values* are left to the serializers, which name the field
(``invalid_unicode``); in a *key* there is no field to name, and a key is echoed in the error
that names an unknown field, so the whole body is refused here."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import BaseParser

from api.fields import unicode_problem

# json.loads yields a lone surrogate or NUL only from a \u escape (raw ones are invalid UTF-8 or
# invalid JSON), so only a body with such an escape is walked: the common body costs one scan.
# A surrogate pair (an escaped emoji) also matches; the walk then finds nothing.
_SUSPECT_ESCAPE = re.compile(r"\\u(?:[dD][89abcdefABCDEF]|0000)")


class RequestTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "request_too_large"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def bad_key(value: Any) -> bool:
    """True when an object key anywhere in ``value`` holds a lone surrogate or NUL."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if unicode_problem(key):
                    return True
                stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)
    return False


class StrictJSONParser(BaseParser):
    media_type = "application/json"

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise RequestTooLarge(f"The request body is larger than {limit} bytes.")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(f"The body is not valid UTF-8 (byte {exc.start}).", code="invalid_unicode") from exc
        try:
            data = json.loads(text, parse_constant=_reject_constant)
        except RecursionError as exc:
            raise ParseError("The JSON is nested too deeply.") from exc
        except ValueError as exc:
            # json's messages name a position, never the input.
            raise ParseError(f"Malformed JSON: {exc}") from exc
        if _SUSPECT_ESCAPE.search(text) and bad_key(data):
            raise ParseError("An object key holds a lone surrogate or NUL (invalid Unicode).", code="invalid_unicode")
        return data
