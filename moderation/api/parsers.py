"""A strict JSON parser: bounded body size, strict UTF-8, no NaN/Infinity, no deep nesting
surprises. Every client mistake becomes a 4xx in the one error shape, never a 500."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import BaseParser


class RequestTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "request_too_large"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


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
            return json.loads(text, parse_constant=_reject_constant)
        except RecursionError as exc:
            raise ParseError("The JSON is nested too deeply.") from exc
        except ValueError as exc:
            raise ParseError(f"Malformed JSON: {exc}") from exc
