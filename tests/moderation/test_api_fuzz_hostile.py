"""Hypothesis over raw bytes and JSON with hostile keys and values, on every API endpoint that
takes a body: never a 5xx, and every 4xx in the one JSON error shape with a bounded body.

Complements tests/test_api_fuzz.py (schemathesis, from the schema): these bodies ignore the
schema on purpose - lone surrogates, NUL, overlong UTF-8, huge keys, deep nesting."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.moderation.api_helpers import ApiCaller, post_payload

pytest_plugins = ["tests.moderation.api_fixtures"]
pytestmark = pytest.mark.django_db

ENDPOINTS = [
    ("post", "/api/v1/posts"),
    ("post", "/api/v1/posts/batch"),
    ("post", "/api/v1/reports"),
    ("put", "/api/v1/authors/u-1"),
    ("post", "/api/v1/blocklist/domains"),
    ("post", "/api/v1/blocklist/ips"),
]
# Error bodies echo at most a prefix of the input: far below the largest body sent here.
MAX_ERROR_BYTES = 64 * 1024

HOSTILE_STRINGS = st.sampled_from(
    ["\udc00", "\ud800", "\x00", "a\x00b", "\ufeff", "\u202e", "__proto__", "constructor", "k" * 5000, "", " "]
)
KEYS = st.one_of(HOSTILE_STRINGS, st.text(max_size=12))
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    HOSTILE_STRINGS,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=16,
)
# Byte-level hazards a JSON encoder would never write: invalid or overlong UTF-8, NaN, deep nesting.
RAW_FRAGMENTS = st.sampled_from(
    [b"\xc0\xaf", b"\xc0\x80", b"\xed\xa0\x80", b"\xff", b"\xe2\x82", b"NaN", b"Infinity", b"[" * 5000, b"\x00"]
)


def _encoded(value: Any) -> bytes:
    # ensure_ascii writes lone surrogates as \\udc00 escapes, as a client's encoder does.
    return json.dumps(value).encode()


@st.composite
def hostile_bodies(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["bytes", "json", "post_with_hostile_key", "batch", "spliced"]))
    if kind == "bytes":
        return draw(st.binary(max_size=256))
    if kind == "json":
        return _encoded(draw(JSON_VALUES))
    if kind == "post_with_hostile_key":
        payload = post_payload(draw(st.text(min_size=1, max_size=8)))
        target = draw(st.sampled_from([payload, payload["author"], payload["preview"], payload["journey"][0]]))
        target[draw(KEYS)] = draw(JSON_VALUES)
        return _encoded(payload)
    if kind == "batch":
        items = draw(st.lists(st.one_of(JSON_VALUES, st.just(post_payload("fz"))), min_size=1, max_size=5))
        return _encoded({"posts": items})
    body = _encoded(draw(JSON_VALUES))
    at = draw(st.integers(min_value=0, max_value=len(body)))
    return body[:at] + draw(RAW_FRAGMENTS) + body[at:]


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
def test_hostile_bodies_never_5xx_and_errors_keep_the_shape(api: ApiCaller, method: str, path: str) -> None:
    @settings(
        max_examples=40,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(body=hostile_bodies())
    @example(body=b'{"\\udc00": 1}')
    @example(body=_encoded({**post_payload(), "\udc00": 1}))
    @example(body=_encoded({"posts": [post_payload("ok"), {"\ud800": 1}, post_payload("bad", text="\udc00")]}))
    @example(body=_encoded({"k" * 1_000_000: 1}))
    def fuzz(body: bytes) -> None:
        response = api.raw(path, body, method=method)
        assert response.status_code < 500, (body[:200], response.content[:500])
        assert response["Content-Type"] == "application/json"
        if response.status_code >= 400:
            error = response.json()["error"]
            assert {"code", "message", "fields"} <= set(error)
            assert len(response.content) <= MAX_ERROR_BYTES
        # Any answer renders: what was sent never breaks the response.
        json.loads(response.content)

    fuzz()
