"""Every class of bad input answers a precise 4xx in the one error shape, never a 500."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from moderation.models import Post
from tests.moderation.api_helpers import ApiCaller, iso, post_payload

pytest_plugins = ["tests.moderation.api_fixtures"]
pytestmark = pytest.mark.django_db


def send(api: ApiCaller, payload: Any) -> Any:
    """POST raw JSON the way a client's encoder writes it (\\u escapes for NUL and surrogates)."""
    return api.raw("/api/v1/posts", json.dumps(payload).encode())


def error(response: Any) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}, body
    assert {"code", "message", "fields"} <= set(body["error"])
    return body["error"]


def assert_field_error(response: Any, path: str, code: str | None = None) -> None:
    assert response.status_code == 400, response.content
    err = error(response)
    assert path in err["fields"], err
    if code is not None:
        codes = {d["code"] for d in err["details"] if d["field"] == path}
        assert code in codes, err["details"]
    assert not Post.objects.exists()


def without(payload: dict[str, Any], *path: str) -> dict[str, Any]:
    target = payload
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return payload


@pytest.mark.parametrize(
    ("path", "field"),
    [
        (("external_id",), "external_id"),
        (("author",), "author"),
        (("author", "external_id"), "author.external_id"),
        (("created_at",), "created_at"),
        (("journey", 0, "at"), "journey[0].at"),
    ],
)
def test_missing_fields(api: ApiCaller, path: tuple, field: str):
    assert_field_error(send(api, without(post_payload(), *path)), field, "required")


@pytest.mark.parametrize(
    ("override", "field", "code"),
    [
        ({"text": 123}, "text", "invalid_type"),
        ({"text": ["a"]}, "text", "invalid_type"),
        ({"external_id": {"a": 1}}, "external_id", "invalid_type"),
        ({"external_id": True}, "external_id", "invalid_type"),
        ({"external_id": 10**30}, "external_id", "invalid_type"),
        ({"url": 5}, "url", "invalid_type"),
        ({"share_count": "5"}, "share_count", "invalid_type"),
        ({"share_count": 1.5}, "share_count", "invalid_type"),
        ({"comment_count": True}, "comment_count", "invalid_type"),
        ({"author": "u-1"}, "author", "invalid"),
        ({"preview": ["x"]}, "preview", "invalid"),
        ({"journey": "open,submit"}, "journey", "not_a_list"),
        ({"journey": ["open"]}, "journey[0]", "invalid"),
        ({"created_at": 1700000000}, "created_at", "invalid_type"),
        ({"created_at": "yesterday"}, "created_at", "invalid"),
        ({"created_at": "2026-02-30T10:00:00Z"}, "created_at", "invalid"),
    ],
)
def test_wrong_types(api: ApiCaller, override: dict, field: str, code: str | None):
    assert_field_error(send(api, post_payload(**override)), field, code)


def test_author_field_types(api: ApiCaller):
    payload = post_payload()
    payload["author"].update(verified="yes", friends_count=-1, followers_count=2**31, post_count=10**40)
    response = send(api, payload)
    assert response.status_code == 400
    fields = error(response)["fields"]
    assert {"author.verified", "author.friends_count", "author.followers_count", "author.post_count"} <= set(fields)


@pytest.mark.parametrize("value", [-1, 2**31, 2**63, 10**100])
def test_numbers_out_of_range(api: ApiCaller, value: int):
    assert_field_error(send(api, post_payload(share_count=value)), "share_count")


def test_largest_int32_is_accepted(api: ApiCaller):
    assert send(api, post_payload(share_count=2**31 - 1)).status_code == 201


def test_text_limits(api: ApiCaller):
    too_long = "x" * (settings.POST_TEXT_MAX_CHARS + 1)
    assert_field_error(send(api, post_payload(text=too_long)), "text", "max_length")
    preview = {"text": "y" * (settings.PREVIEW_TEXT_MAX_CHARS + 1)}
    assert_field_error(send(api, post_payload(preview=preview)), "preview.text", "max_length")
    assert_field_error(send(api, post_payload(external_id="e" * 256)), "external_id", "max_length")
    ok = send(api, post_payload(text="x" * settings.POST_TEXT_MAX_CHARS))
    assert ok.status_code == 201


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("ftp://example.com/x", "invalid_scheme"),
        ("javascript:alert(1)", "invalid_scheme"),
        ("mailto:a@example.com", "invalid_scheme"),
        ("http://", "invalid_url"),
        ("https://[fe80::1%25eth0]/", "invalid_url"),
        ("//example.com/x", "invalid_scheme"),
        ("example.com", "invalid_scheme"),
        ("https://exa mple.com/", "invalid_url"),
        ("https://exa\nmple.com/", "invalid_url"),
        ("http://[::1/", "invalid_url"),
        ("http://example.com:99999/", "invalid_url"),
        ("http://exa^mple.com/", "invalid_url"),
        ("http://0x1.2.3.4.5/", "invalid_url"),
        ("https://example.com/" + "a" * 2048, "max_length"),
    ],
)
def test_malformed_urls(api: ApiCaller, url: str, code: str | None):
    assert_field_error(send(api, post_payload(url=url)), "url", code)


@pytest.mark.parametrize(
    ("url", "stored"),
    [
        ("https://bücher.example/straße", "https://xn--bcher-kva.example/stra%C3%9Fe"),
        ("http://192.0.2.1:8080/x", "http://192.0.2.1:8080/x"),
        ("https://[2001:db8::1]/", "https://[2001:db8::1]/"),
        # Odd, but browsers open them, so they are links: the slashes after the scheme are
        # skipped, and an empty label or an underscore is allowed in a host.
        ("https:///path", "https://path/"),
        ("http://exa_mple..com/", "http://exa_mple..com/"),
    ],
)
def test_unusual_but_valid_urls(api: ApiCaller, url: str, stored: str):
    assert send(api, post_payload(url=url)).status_code == 201
    assert Post.objects.get().url == stored


def test_empty_or_null_url_means_no_link(api: ApiCaller):
    assert send(api, post_payload("a", url="")).status_code == 201
    assert send(api, post_payload("b", url=None)).status_code == 201
    assert not Post.objects.exclude(link=None).exists()


@pytest.mark.parametrize("ip", ["999.1.1.1", "1.2.3", "abc", "::g", "01.2.3.4", "fe80::1%eth0", "1.2.3.4/24"])
def test_invalid_ips(api: ApiCaller, ip: str):
    assert_field_error(send(api, post_payload(ip=ip)), "ip", "invalid_ip")


def test_ip_is_canonicalized(api: ApiCaller):
    send(api, post_payload(ip="2001:DB8:0:0:0:0:0:1"))
    ip = Post.objects.get().ip
    assert ip is not None and ip.address == "2001:db8::1"


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"text": "nul\u0000byte"}, "text"),
        ({"text": "lone \ud800 surrogate"}, "text"),
        ({"external_id": "id\u0000"}, "external_id"),
        ({"preview": {"title": "\udfff"}}, "preview.title"),
        ({"journey": [{"step": "x\u0000", "at": "2026-01-01T00:00:00Z"}]}, "journey[0].step"),
        # Timestamps too (they were a KeyError, i.e. a 500: DRF's "invalid" message wants a format).
        ({"created_at": "2026-01-01T00:00:00Z\u0000"}, "created_at"),
        ({"journey": [{"step": "tap", "at": "2026-01-01\ud800"}]}, "journey[0].at"),
    ],
)
def test_bad_unicode_is_rejected(api: ApiCaller, override: dict, field: str):
    response = send(api, post_payload(**override))
    assert_field_error(response, field, "invalid_unicode")
    assert error(response)["code"] == "invalid_unicode"


def test_bad_unicode_in_author(api: ApiCaller):
    payload = post_payload()
    payload["author"]["username"] = "\u0000"
    assert_field_error(send(api, payload), "author.username", "invalid_unicode")


def test_invalid_utf8_body(api: ApiCaller):
    body = json.dumps(post_payload()).encode().replace(b"Win a free", b"Win \xff\xfe free")
    response = api.raw("/api/v1/posts", body)
    assert response.status_code == 400
    assert error(response)["code"] == "invalid_unicode"


def test_unicode_text_is_fine(api: ApiCaller):
    text = "Gewinne 🎉 jetzt! 免费 iPhone — ﷽"
    assert send(api, post_payload(text=text)).status_code == 201
    assert Post.objects.get().text == text


def test_journey_limits(api: ApiCaller):
    steps = [{"step": "tap", "at": iso()} for _ in range(settings.JOURNEY_MAX_STEPS + 1)]
    assert_field_error(send(api, post_payload(journey=steps)), "journey", "max_length")
    future = [{"step": "tap", "at": iso(timedelta(days=30))}]
    assert_field_error(send(api, post_payload(journey=future)), "journey[0].at", "future")
    unordered = [{"step": "a", "at": iso()}, {"step": "b", "at": iso(-timedelta(minutes=1))}]
    assert_field_error(send(api, post_payload(journey=unordered)), "journey[1].at")
    bad = [{"step": "a", "at": "not a time"}]
    assert_field_error(send(api, post_payload(journey=bad)), "journey[0].at", "invalid")
    assert_field_error(send(api, post_payload(journey=[{"step": "", "at": iso()}])), "journey[0].step", "blank")


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("2999-01-01T00:00:00Z", "future"),
        ("1900-01-01T00:00:00Z", "past"),
        ("0001-01-01T00:00:00+05:00", None),
        ("9999-12-31T23:59:59-12:00", None),
    ],
)
def test_created_at_bounds(api: ApiCaller, value: str, code: str | None):
    assert_field_error(send(api, post_payload(created_at=value)), "created_at", code)


def test_naive_timestamp_is_read_as_utc(api: ApiCaller):
    assert send(api, post_payload(created_at="2026-01-01T10:00:00")).status_code == 201
    assert Post.objects.get().created_at.isoformat() == "2026-01-01T10:00:00+00:00"


@pytest.mark.parametrize(
    "body",
    [b"{", b"{'a': 1}", b"NaN", b'{"a": Infinity}', b"[" * 100_000 + b"]" * 100_000, b'{"a": 1} trailing'],
)
def test_malformed_json(api: ApiCaller, body: bytes):
    response = api.raw("/api/v1/posts", body)
    assert response.status_code == 400
    assert error(response)["code"] == "parse_error"


def test_json_that_is_not_an_object(api: ApiCaller):
    for body in (b"[]", b"42", b'"text"', b"null"):
        response = api.raw("/api/v1/posts", body)
        assert response.status_code == 400, body
        assert error(response)["fields"]


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
def test_wrong_content_type(api: ApiCaller, content_type: str):
    response = api.raw("/api/v1/posts", json.dumps(post_payload()).encode(), content_type=content_type)
    assert response.status_code == 415
    assert error(response)["code"] == "unsupported_media_type"


def test_json_with_charset_is_fine(api: ApiCaller):
    response = api.raw("/api/v1/posts", json.dumps(post_payload()).encode(), "application/json; charset=utf-8")
    assert response.status_code == 201


def test_body_too_large(api: ApiCaller, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2_000
    response = send(api, post_payload(text="x" * 3_000))
    assert response.status_code == 413
    assert error(response)["code"] == "request_too_large"
    batch = api.raw("/api/v1/posts/batch", json.dumps({"posts": [post_payload()] * 5}).encode())
    assert batch.status_code == 413


# --- fuzzing: no client input is a 500 ----------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
FIELDS = ["external_id", "text", "url", "ip", "journey", "share_count", "created_at", "preview", "author"]


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(FIELDS), value=json_values)
def test_fuzzed_fields_never_500(api: ApiCaller, field: str, value: Any):
    payload = post_payload("fuzz")
    payload[field] = value
    response = send(api, payload)
    # 409: the examples share one external_id, and a resend with other content conflicts.
    assert response.status_code in (200, 201, 400, 409), response.content
    if response.status_code in (400, 409):
        error(response)


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    field=st.sampled_from(["external_id", "username", "email_domain", "account_created_at", "friends_count"]),
    value=json_values,
)
def test_fuzzed_author_never_500(api: ApiCaller, field: str, value: Any):
    payload = post_payload("fuzz-author")
    payload["author"][field] = value
    response = send(api, payload)
    # 409: the examples share one external_id, and a resend by another author conflicts.
    assert response.status_code in (200, 201, 400, 409), response.content
    if response.status_code in (400, 409):
        error(response)


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.binary(max_size=200))
def test_fuzzed_bodies_never_500(api: ApiCaller, body: bytes):
    response = api.raw("/api/v1/posts", body)
    assert response.status_code in (400, 415), response.content


@pytest.mark.parametrize(
    ("override", "path"),
    [
        ({"author": {"external_id": "u-1", "email": "a@b.example"}}, "author.email"),
        ({"autor": {"external_id": "u-1"}}, "autor"),
        ({"preview": {"title": "t", "body": "b"}}, "preview.body"),
        ({"journey": [{"step": "submit", "at": "2026-11-21T10:00:00Z", "ms": 3}]}, "journey[0].ms"),
    ],
)
def test_unknown_fields_are_rejected_by_name(api: ApiCaller, override: dict, path: str):
    response = send(api, post_payload(**override))
    assert_field_error(response, path, "unknown_field")
    assert not Post.objects.exists()


def test_unknown_field_is_reported_with_the_other_errors(api: ApiCaller):
    payload = post_payload(author={"external_id": "u-1", "email": "a@b.example"})
    del payload["created_at"]
    err = error(send(api, payload))
    assert {"author.email", "created_at"} <= set(err["fields"])


def test_unknown_field_in_a_batch_item_invalidates_only_that_item(api: ApiCaller):
    good, bad = post_payload("good"), post_payload("bad", author={"external_id": "u-1", "email": "x"})
    response = api.post("/api/v1/posts/batch", {"posts": [good, bad]})
    assert response.status_code == 207
    body = response.json()
    assert (body["created"], body["invalid"]) == (1, 1)
    assert body["results"][1]["errors"] == {"author.email": ["Unknown field."]}


def test_unknown_fields_elsewhere(api: ApiCaller):
    response = api.post("/api/v1/reports", {"post_external_id": "p", "reporter_id": "r", "reason": "spam", "x": 1})
    assert_field_error(response, "x", "unknown_field")
    response = api.put("/api/v1/authors/u-9", {"username": "ann", "mail": "a@b.example"})
    assert_field_error(response, "mail", "unknown_field")
    response = api.post("/api/v1/posts/batch", {"posts": [post_payload()], "extra": True})
    assert_field_error(response, "extra", "unknown_field")


def test_bad_unicode_timestamp_in_a_batch_is_one_invalid_item(api: ApiCaller):
    bad = post_payload("bad", created_at="2026-01-01T00:00:00Z\u0000")
    response = api.post("/api/v1/posts/batch", {"posts": [post_payload("good"), bad]})
    assert response.status_code == 207
    results = response.json()["results"]
    assert [r["status"] for r in results] == ["created", "invalid"]
    assert "created_at" in results[1]["errors"]
