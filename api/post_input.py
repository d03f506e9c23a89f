"""The one validator of an ingested post, for POST /api/v1/posts and every item of
POST /api/v1/posts/batch: PostInputSerializer is the spec and words every error; a fast path
returns exactly what the serializer returns for the common, valid post.

PostInputSerializer.run_validation walks DRF's field tree for every post (empty-value checks,
validator lists, Django's per-character surrogate scan). `PostInputValidator._fast` checks the
usual shape directly and gives up (`_Unsure`) at the first thing it is not sure about (a wrong
type, a blank, a length, a naive timestamp, an unknown key, an out-of-order journey ...); the
post then goes through the serializer, which accepts it or raises its ValidationError, so the
error contract (shape, caps, codes) is the serializer's alone.

The fast path reads its key sets, renames and length limits from the serializer's fields, and
runs only while it knows every field the serializer declares (`FAST_PATH_COMPLETE`): a field
added to the serializer sends every post through the serializer (correct, slower) until the
fast path learns it, and tests/moderation/test_api_batch_items.py fails until then.

Why it is kept: measured in one run, alternating, with benchmarks/ingest_profile.py --posts 1000
--batch 50 (the serializer-only runs patch `_fast` to give up), a batch costs 0.136-0.151 ms of
web CPU per post with the fast path and 0.206-0.222 ms without (6,600-7,350 against 4,500-4,850
posts per CPU second); with the PostgreSQL backend's CPU, 0.22-0.25 against 0.28-0.32 ms per
post: about 20 % of the batch ingest throughput. For single posts (~1.9 ms, mostly the request
and its six queries) the difference is within noise; they share the path for one set of rules."""

from __future__ import annotations

import ipaddress
from datetime import datetime, tzinfo
from typing import Any, NamedTuple

from django.utils import timezone
from rest_framework.exceptions import ValidationError

from api.fields import FUTURE_SKEW, INT32_MAX
from api.serializers import PostInputSerializer

# The spec: the serializer's (shared, stateless) field tree. Any: the limits below are attributes
# of the concrete field classes, which the BindingDict's Field type does not name.
_POST: Any = PostInputSerializer().fields
_AUTHOR: Any = _POST["author"].fields
_PREVIEW: Any = _POST["preview"].fields
_STEP: Any = _POST["journey"].child.fields

POST_KEYS = frozenset(_POST)
AUTHOR_KEYS = frozenset(_AUTHOR)
PREVIEW_KEYS = frozenset(_PREVIEW)
JOURNEY_STEP_KEYS = frozenset(_STEP)
# Author payload key -> validated key (the fields' `source=`).
PLATFORM_COUNTS = {name: field.source for name, field in _AUTHOR.items() if field.source != name}
# The fields `_fast` validates; anything else the serializer declares disables the fast path.
FAST_FIELDS = {
    "post": frozenset(
        {"external_id", "author", "text", "url", "preview", "ip", "journey"}
        | {"share_count", "comment_count", "created_at"}
    ),
    "author": frozenset(
        {"external_id", "username", "account_created_at", "email_domain", "verified"}
        | {"friends_count", "followers_count", "post_count", "spam_post_count", "spam_report_count"}
    ),
    "preview": frozenset({"title", "description", "text"}),
    "journey step": frozenset({"step", "at"}),
}
FAST_PATH_COMPLETE = (
    FAST_FIELDS["post"] == POST_KEYS
    and FAST_FIELDS["author"] == AUTHOR_KEYS
    and FAST_FIELDS["preview"] == PREVIEW_KEYS
    and FAST_FIELDS["journey step"] == JOURNEY_STEP_KEYS
)

EXTERNAL_ID_MAX: int = _POST["external_id"].max_length
TEXT_MAX: int = _POST["text"].max_length
USERNAME_MAX: int = _AUTHOR["username"].max_length
EMAIL_DOMAIN_MAX: int = _AUTHOR["email_domain"].max_length
TITLE_MAX: int = _PREVIEW["title"].max_length
PREVIEW_TEXT_MAX = {key: int(_PREVIEW[key].max_length) for key in ("description", "text")}
IP_MAX: int = _POST["ip"].max_length
JOURNEY_MAX: int = _POST["journey"].max_length
STEP_MAX: int = _STEP["step"].max_length
POSTS_SINCE: datetime = _POST["created_at"].not_before
ACCOUNTS_SINCE: datetime = _AUTHOR["account_created_at"].not_before
JOURNEY_SINCE: datetime = _STEP["at"].not_before


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
        out["username"] = _text(value["username"], USERNAME_MAX)
    if "account_created_at" in value:
        at = value["account_created_at"]
        out["account_created_at"] = None if at is None else _timestamp(at, ACCOUNTS_SINCE, clock)
    if "email_domain" in value:
        # AuthorProfileInputSerializer.validate_email_domain: keep only the domain.
        domain = _text(value["email_domain"], EMAIL_DOMAIN_MAX, trim=True)
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
        out["title"] = _text(value["title"], TITLE_MAX)
    for key in ("description", "text"):
        if key in value:
            out[key] = _text(value[key], PREVIEW_TEXT_MAX[key])
    return out


def _ip(value: Any) -> str | None:
    if value is None:
        return None
    text = _text(value, IP_MAX, trim=True)
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
    if type(value) is not list or len(value) > JOURNEY_MAX:
        raise _Unsure
    steps: list[dict[str, Any]] = []
    for step in value:
        if type(step) is not dict or step.keys() != JOURNEY_STEP_KEYS:
            raise _Unsure
        at = _timestamp(step["at"], JOURNEY_SINCE, clock)
        if steps and at < steps[-1]["at"]:
            raise _Unsure  # out of order: the serializer words the error
        steps.append({"step": _text(step["step"], STEP_MAX, trim=True, blank=False), "at": at})
    return steps


class PostInputValidator:
    """Validates posts one by one: the fast path, else PostInputSerializer (one instance for all
    the posts of a request, as ListSerializer does). `validate` returns the serializer's
    validated data or raises its ValidationError."""

    def __init__(self) -> None:
        self.serializer = PostInputSerializer()
        self._url_field = _POST["url"]
        self._clock = _Clock.now()

    def validate(self, item: Any) -> dict[str, Any]:
        if FAST_PATH_COMPLETE:
            try:
                return self._fast(item)
            except _Unsure:
                pass
        validated: dict[str, Any] = self.serializer.run_validation(item)
        return validated

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
            "text": _text(get("text", ""), TEXT_MAX),
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
