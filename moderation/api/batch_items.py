"""Validation of the items of POST /api/v1/posts/batch: a fast path for the common item, the
serializer for everything else.

PostInputSerializer.run_validation walks DRF's field tree for every item (empty-value checks,
validator lists, Django's per-character surrogate scan): ~0.18 ms per post, the largest Python
cost of a batch request after the SQL. `fast_post_item` checks the usual shape directly and
returns exactly what the serializer returns for it (same keys, defaults, renames and
normalisation; tests/moderation/test_api_batch_items.py compares the two). It returns None at
the first thing it is not sure about (a wrong type, a blank, a length, a naive timestamp, an
unknown key, an out-of-order journey ...), and the item then goes through the serializer,
which produces the errors: the error contract is the serializer's, unchanged.

Keep it in step with moderation.api.serializers: a field added there is an unknown key here
(so the serializer handles such items) until it is added here too."""

from __future__ import annotations

import ipaddress
from datetime import datetime, tzinfo
from typing import Any, NamedTuple

from django.conf import settings
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from moderation.api.fields import FUTURE_SKEW, INT32_MAX
from moderation.api.serializers import ACCOUNTS_SINCE, EXTERNAL_ID_MAX, POSTS_SINCE, PostInputSerializer

POST_KEYS = frozenset(
    {"external_id", "author", "text", "url", "preview", "ip", "journey", "share_count", "comment_count", "created_at"}
)
# Author payload key -> validated key (serializer `source=`), as EmbeddedAuthorInputSerializer.
PLATFORM_COUNTS = {
    "post_count": "platform_post_count",
    "spam_post_count": "platform_spam_post_count",
    "spam_report_count": "platform_spam_report_count",
}
AUTHOR_KEYS = frozenset(
    {"external_id", "username", "account_created_at", "email_domain", "friends_count", "followers_count", "verified"}
    | PLATFORM_COUNTS.keys()
)
PREVIEW_KEYS = frozenset({"title", "description", "text"})
JOURNEY_STEP_KEYS = frozenset({"step", "at"})


class _Unsure(Exception):
    """The fast path cannot vouch for this item: the serializer decides."""


def _clean(value: str, max_length: int) -> str:
    if "\x00" in value or len(value) > max_length:
        raise _Unsure
    if not value.isascii():
        try:
            value.encode("utf-8")  # lone surrogates
        except UnicodeEncodeError as exc:
            raise _Unsure from exc
    return value


def _text(value: Any, max_length: int, *, trim: bool = False, blank: bool = True) -> str:
    if type(value) is not str:
        raise _Unsure
    if trim:
        value = value.strip()
    if not value:
        if not blank:
            raise _Unsure
        return ""
    return _clean(value, max_length)


def _count(value: Any) -> int:
    if type(value) is not int or not 0 <= value <= INT32_MAX:
        raise _Unsure
    return value


class _Clock(NamedTuple):
    """The current time zone and the latest timestamp accepted, read once per batch request:
    per timestamp, get_current_timezone (a context-local lookup) and now() were 6 % of the
    request's CPU (py-spy, benchmarks/e2e_load.py --ingest-batch 32)."""

    tz: tzinfo
    latest: datetime

    @classmethod
    def now(cls) -> _Clock:
        return cls(timezone.get_current_timezone(), timezone.now() + FUTURE_SKEW)


def _timestamp(value: Any, not_before: datetime, clock: _Clock) -> datetime:
    """DRF's ISO 8601 parse (django parse_datetime tries datetime.fromisoformat first) and
    enforce_timezone for an aware value; a naive one is left to the serializer."""
    # ASCII only: Python's fromisoformat takes any character as the date/time separator, DRF
    # rejects NUL and lone surrogates first.
    if type(value) is not str or not value.isascii() or "\x00" in value:
        raise _Unsure
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise _Unsure from exc
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise _Unsure
    try:
        parsed = parsed.astimezone(clock.tz)
    except OverflowError as exc:
        raise _Unsure from exc
    if parsed > clock.latest or parsed < not_before:
        raise _Unsure
    return parsed


def _author(value: Any, clock: _Clock) -> dict[str, Any]:
    if type(value) is not dict or not value.keys() <= AUTHOR_KEYS or "external_id" not in value:
        raise _Unsure
    # Field order as the serializer's: the profile fields, then external_id (the subclass').
    out: dict[str, Any] = {}
    if "username" in value:
        out["username"] = _text(value["username"], 255)
    if "account_created_at" in value:
        at = value["account_created_at"]
        out["account_created_at"] = None if at is None else _timestamp(at, ACCOUNTS_SINCE, clock)
    if "email_domain" in value:
        # AuthorProfileInputSerializer.validate_email_domain: keep only the domain.
        domain = _text(value["email_domain"], 253, trim=True)
        out["email_domain"] = domain.rpartition("@")[2].strip().lower().rstrip(".")
    for key in ("friends_count", "followers_count"):
        if key in value:
            out[key] = _count(value[key])
    if "verified" in value:
        if type(value["verified"]) is not bool:
            raise _Unsure
        out["verified"] = value["verified"]
    for key, target in PLATFORM_COUNTS.items():
        if key in value:
            out[target] = _count(value[key])
    out["external_id"] = _text(value["external_id"], EXTERNAL_ID_MAX, trim=True, blank=False)
    return out


def _preview(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if type(value) is not dict or not value.keys() <= PREVIEW_KEYS:
        raise _Unsure
    out: dict[str, str] = {}
    if "title" in value:
        out["title"] = _text(value["title"], 500)
    for key in ("description", "text"):
        if key in value:
            out[key] = _text(value[key], settings.PREVIEW_TEXT_MAX_CHARS)
    return out


def _ip(value: Any) -> str | None:
    if value is None:
        return None
    text = _text(value, 64, trim=True)
    if not text:
        return None  # PostInputSerializer.validate_ip: blank is no address
    try:
        address = ipaddress.ip_address(text)
    except ValueError as exc:
        raise _Unsure from exc
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
        raise _Unsure
    return address.compressed


def _journey(value: Any, clock: _Clock) -> list[dict[str, Any]]:
    if type(value) is not list or len(value) > settings.JOURNEY_MAX_STEPS:
        raise _Unsure
    steps: list[dict[str, Any]] = []
    for step in value:
        if type(step) is not dict or step.keys() != JOURNEY_STEP_KEYS:
            raise _Unsure
        at = _timestamp(step["at"], POSTS_SINCE, clock)
        if steps and at < steps[-1]["at"]:
            raise _Unsure  # out of order: the serializer words the error
        steps.append({"step": _text(step["step"], 64, trim=True, blank=False), "at": at})
    return steps


class BatchItemValidator:
    """Validates batch items one by one: the fast path, else PostInputSerializer (one instance
    for all items, as ListSerializer does). `validate` raises the serializer's ValidationError."""

    def __init__(self) -> None:
        self.serializer = PostInputSerializer()
        self._url_field = self.serializer.fields["url"]
        self._clock = _Clock.now()

    def validate(self, item: Any) -> dict[str, Any]:
        try:
            return self._fast(item)
        except _Unsure:
            return self.serializer.run_validation(item)

    def _url(self, value: Any) -> str:
        if value is None or value == "":
            return ""
        # The URL checks are the field's own and validate_url's (link normalisation, length).
        try:
            return self.serializer.validate_url(self._url_field.run_validation(value))
        except ValidationError as exc:
            raise _Unsure from exc

    def _fast(self, item: Any) -> dict[str, Any]:
        if type(item) is not dict or not item.keys() <= POST_KEYS or "author" not in item:
            raise _Unsure
        get = item.get
        out: dict[str, Any] = {
            "external_id": _text(get("external_id"), EXTERNAL_ID_MAX, trim=True, blank=False),
            "author": _author(item["author"], self._clock),
            "text": _text(get("text", ""), settings.POST_TEXT_MAX_CHARS),
            "url": self._url(get("url", "")),
        }
        if "preview" in item:
            out["preview"] = _preview(item["preview"])
        out["ip"] = _ip(get("ip"))
        out["journey"] = _journey(get("journey", []), self._clock)
        out["share_count"] = _count(get("share_count", 0))
        out["comment_count"] = _count(get("comment_count", 0))
        out["created_at"] = _timestamp(get("created_at"), POSTS_SINCE, self._clock)
        return out
