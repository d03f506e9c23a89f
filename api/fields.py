"""Serializer fields that check what PostgreSQL and the pipeline will choke on: NUL bytes and
lone surrogates (PostgreSQL rejects both in text and jsonb), integers beyond a 4-byte column,
booleans and floats posing as integers, timestamps far in the future."""

from __future__ import annotations

import ipaddress
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

from core.urls import InvalidUrl, UnsupportedScheme, url_parts

# PositiveIntegerField is a 4-byte integer on PostgreSQL.
INT32_MAX = 2**31 - 1
URL_MAX_CHARS = 2048
# Invalid elements a BoundedListField checks and reports before it stops reading the list.
LIST_ERRORS_MAX = 10
# Platform clocks drift; anything later than this is a client bug, not a post from the future.
FUTURE_SKEW = timedelta(days=1)


def unicode_problem(value: str) -> str | None:
    if "\x00" in value:
        return "NUL characters are not allowed."
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "The text contains lone surrogates (invalid Unicode)."
    return None


class StrictCharField(serializers.CharField):
    """A string, and only a string (numbers are accepted only with ``allow_numbers``)."""

    default_error_messages = {
        "invalid_type": "Expected a string.",
        "invalid_unicode": "{reason}",
    }

    def __init__(self, *, allow_numbers: bool = False, **kwargs: Any) -> None:
        self.allow_numbers = allow_numbers
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if isinstance(data, bool) or not isinstance(data, str | int if self.allow_numbers else str):
            self.fail("invalid_type")
        if isinstance(data, int) and not -(2**63) <= data < 2**63:
            self.fail("invalid_type")
        value = str(data)
        problem = unicode_problem(value)
        if problem:
            self.fail("invalid_unicode", reason=problem)
        return super().to_internal_value(value)


class BoundedIntegerField(serializers.IntegerField):
    """A JSON integer in [0, 2^31-1]; rejects booleans, floats and numeric strings."""

    default_error_messages = {"invalid_type": "Expected an integer."}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 0)
        kwargs.setdefault("max_value", INT32_MAX)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid_type")
        return int(data)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "Expected true or false."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class BoundedDateTimeField(serializers.DateTimeField):
    """An ISO 8601 timestamp between ``not_before`` and now + FUTURE_SKEW."""

    default_error_messages = {
        "future": "The timestamp is too far in the future.",
        "past": "The timestamp is before {not_before}.",
        "invalid_type": "Expected an ISO 8601 timestamp string.",
        "invalid_unicode": "{reason}",
    }

    def __init__(self, *, not_before: datetime, **kwargs: Any) -> None:
        self.not_before = not_before
        super().__init__(**kwargs)

    def to_internal_value(self, value: Any) -> datetime:
        if not isinstance(value, str):
            self.fail("invalid_type")
        problem = unicode_problem(value)
        if problem:
            self.fail("invalid_unicode", reason=problem)
        parsed = super().to_internal_value(value)
        if parsed > timezone.now() + FUTURE_SKEW:
            self.fail("future")
        if parsed < self.not_before:
            self.fail("past", not_before=self.not_before.date().isoformat())
        return parsed


class HttpUrlField(StrictCharField):
    """An absolute http(s) URL with a host, at most 2048 characters, read as browsers read it
    (core.urls): what a browser would not open is refused."""

    default_error_messages = {
        "invalid_url": "Enter a valid http or https URL with a host.",
        "invalid_scheme": "The URL scheme must be http or https.",
    }

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", URL_MAX_CHARS)
        kwargs.setdefault("trim_whitespace", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if value == "":
            return value
        # Browsers drop tabs and newlines inside a URL; a client that sends them is refused
        # rather than guessed at.
        if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
            self.fail("invalid_url")
        try:
            parts = url_parts(value, require_scheme=True)
        except UnsupportedScheme:
            self.fail("invalid_scheme")
        except InvalidUrl:
            self.fail("invalid_url")
        if parts.scheme not in ("http", "https"):
            self.fail("invalid_scheme")
        return value


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"\S"},
            {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1},
        ],
        "description": "The platform's id: a string (trimmed) or an integer, stored as text.",
    }
)
class ExternalIdField(StrictCharField):
    """A platform's id: a non-blank string of at most 255 characters (trimmed), or an integer
    that fits 64 bits (stored as its decimal text)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 255)
        kwargs.setdefault("trim_whitespace", True)
        super().__init__(allow_numbers=True, **kwargs)


@extend_schema_field({"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}], "maxLength": 64})
class IpAddressField(StrictCharField):
    """An IPv4 or IPv6 address, returned in its compressed canonical form."""

    default_error_messages = {"invalid_ip": "Enter a valid IPv4 or IPv6 address."}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 64)
        kwargs.setdefault("trim_whitespace", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        try:
            address = ipaddress.ip_address(value)
        except ValueError:
            self.fail("invalid_ip")
        if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
            self.fail("invalid_ip")
        return address.compressed


class BoundedListField(serializers.ListField):
    """A ListField whose validation cost is bounded by its input's size only while the input
    is valid: a list over max_length is refused before any element is read (DRF validates every
    element first and checks the length last), and reading stops at the LIST_ERRORS_MAX-th
    invalid element, with a note that the rest was not checked. So a batch of 500 posts with 200
    bad journey steps each validates 5,000 steps, not 100,000."""

    default_error_messages = {
        "not_checked": "Only the first {errors_max} invalid elements are reported; the rest were not checked.",
    }

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, list) and self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return super().to_internal_value(data)

    def run_child_validation(self, data: Any) -> list[Any]:
        result: list[Any] = []
        errors: dict[Any, Any] = {}
        for index, item in enumerate(data):
            try:
                result.append(self.child.run_validation(item))
            except serializers.ValidationError as exc:
                errors[index] = exc.detail
                if len(errors) >= LIST_ERRORS_MAX and index < len(data) - 1:
                    message = self.error_messages["not_checked"].format(errors_max=LIST_ERRORS_MAX)
                    errors["non_field_errors"] = [ErrorDetail(message, code="not_checked")]
                    break
        if errors:
            raise serializers.ValidationError(errors)
        return result
