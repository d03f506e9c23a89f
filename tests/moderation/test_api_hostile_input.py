"""Hostile bodies on every write endpoint: bad Unicode anywhere answers 400 in the JSON error
shape, an error never echoes more than a short prefix of the input, and a batch whose response
would have failed never commits first."""

from __future__ import annotations

import json
from typing import Any

import pytest

from api.errors import ECHO_MAX_CHARS, FIELD_ERRORS_MAX
from moderation.models import Post
from tests.moderation.api_helpers import ApiCaller, post_payload

pytest_plugins = ["tests.moderation.api_fixtures"]
pytestmark = pytest.mark.django_db

WRITE_ENDPOINTS = [
    ("post", "/api/v1/posts"),
    ("post", "/api/v1/posts/batch"),
    ("post", "/api/v1/reports"),
    ("put", "/api/v1/authors/u-1"),
    ("post", "/api/v1/blocklist/domains"),
    ("post", "/api/v1/blocklist/ips"),
]

# Raw bodies, as an attacker's client writes them (json.dumps would refuse some of them).
BAD_UNICODE_BODIES = {
    "lone low surrogate key": b'{"\\udc00": 1}',
    "lone high surrogate key": b'{"\\ud800": 1}',
    "NUL key": b'{"\\u0000": 1}',
    "nested surrogate key": b'{"author": {"\\udfff": 1}}',
    "surrogate key in a batch item": b'{"posts": [{"\\udc00": 1}]}',
    "overlong slash": b'{"text": "\xc0\xaf"}',
    "overlong NUL": b'{"text": "\xc0\x80"}',
    "encoded surrogate": b'{"text": "\xed\xa0\x80"}',
    "invalid byte": b'{"text": "\xff"}',
    "truncated sequence": b'{"text": "\xe2\x82"}',
}


def error(response: Any) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}, body
    assert {"code", "message", "fields"} <= set(body["error"]), body
    return body["error"]


@pytest.mark.parametrize(("method", "path"), WRITE_ENDPOINTS)
@pytest.mark.parametrize("body", BAD_UNICODE_BODIES.values(), ids=BAD_UNICODE_BODIES.keys())
def test_bad_unicode_anywhere_is_a_400_in_the_error_shape(api: ApiCaller, method: str, path: str, body: bytes) -> None:
    response = api.raw(path, body, method=method)
    assert response.status_code == 400, response.content
    assert error(response)["code"] == "invalid_unicode"
    assert not Post.objects.exists()


def test_an_escaped_emoji_key_is_an_unknown_field_not_invalid_unicode(api: ApiCaller) -> None:
    # A surrogate pair is a valid character: the parser's scan matches it, the walk clears it.
    body = json.dumps({**post_payload(), "\U0001f600": 1}).encode()
    response = api.raw("/api/v1/posts", body)
    assert response.status_code == 400
    assert error(response)["fields"] == {"\U0001f600": ["Unknown field."]}


def test_a_lone_surrogate_value_in_a_batch_fails_only_its_item(api: ApiCaller) -> None:
    body = json.dumps({"posts": [post_payload("ok-1"), post_payload("bad-1", text="\udc00")]}).encode()
    response = api.raw("/api/v1/posts/batch", body)
    assert response.status_code == 207, response.content
    rows = response.json()["results"]
    assert [r["status"] for r in rows] == ["created", "invalid"]
    assert "text" in rows[1]["errors"]
    assert list(Post.objects.values_list("external_id", flat=True)) == ["ok-1"]


def test_a_surrogate_key_in_a_batch_item_commits_nothing(api: ApiCaller) -> None:
    body = json.dumps({"posts": [post_payload("ok-1")]})[:-2] + ', {"\\udc00": 1}]}'
    response = api.raw("/api/v1/posts/batch", body.encode())
    assert response.status_code == 400, response.content
    assert not Post.objects.exists()


def test_a_huge_unknown_key_is_echoed_as_a_short_prefix(api: ApiCaller) -> None:
    key = "k" * (10 * 1024 * 1024)
    response = api.raw("/api/v1/posts", json.dumps({**post_payload(), key: 1}).encode())
    assert response.status_code == 400
    (path,) = error(response)["fields"]
    assert len(path) == ECHO_MAX_CHARS and path.startswith("kkk")
    assert len(response.content) < 2048


def test_many_unknown_keys_list_a_bounded_number_then_say_truncated(api: ApiCaller) -> None:
    payload = {**post_payload(), **{f"extra-{i:06}": i for i in range(100_000)}}
    response = api.raw("/api/v1/posts", json.dumps(payload).encode())
    err = error(response)
    assert len(err["fields"]) == FIELD_ERRORS_MAX
    assert err["truncated"] is True
    assert len(response.content) < 16 * 1024


def test_a_full_batch_of_bad_items_answers_a_bounded_body(api: ApiCaller) -> None:
    item = {**post_payload(), **{f"{i:03}" + "x" * 200: "v" * 10 for i in range(100)}}
    body = json.dumps({"posts": [item] * 500}).encode()
    assert len(body) < 20 * 1024 * 1024
    response = api.raw("/api/v1/posts/batch", body)
    assert response.status_code == 207
    rows = response.json()["results"]
    assert all(r["status"] == "invalid" and r["truncated"] is True for r in rows)
    assert [len(r["errors"]) for r in rows] == [10] * 100 + [1] * 400  # 1,000 listed, then one each
    assert len(response.content) < 512 * 1024
    assert not Post.objects.exists()


def test_a_message_quoting_input_is_clipped(api: ApiCaller) -> None:
    query = "cursor=%ED%A0%80" + "c" * 100_000 + "&domain=%C0%AF" + "d" * 100_000
    response = api.client.get("/api/v1/blocklist/domains", QUERY_STRING=query)
    assert response.status_code in (400, 404)
    assert len(response.content) < 2048
    error(response)


@pytest.mark.parametrize("accept", ["text/html", "application/xml", "text/html,*/*;q=0.8"])
def test_errors_are_json_whatever_the_accept_header(api: ApiCaller, accept: str) -> None:
    response = api.client.post("/api/v1/posts", data=b"{}", content_type="application/json", HTTP_ACCEPT=accept)
    assert response.status_code in (400, 406)
    assert response["Content-Type"] == "application/json"
    error(response)
    missing = api.client.get("/api/v1/posts/nothing-here", HTTP_ACCEPT=accept)
    assert missing["Content-Type"] == "application/json" and missing.status_code in (404, 406)
