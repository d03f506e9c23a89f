"""Hostile request bodies for the API, shared by tests/moderation/test_api_fuzz_hostile.py (a
small derandomized run in CI) and benchmarks/hostile_input.py (10,000+ requests against a
running server): JSON with hostile keys and values, and byte-level hazards no JSON encoder
writes (invalid or overlong UTF-8, NaN, deep nesting, NUL)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from tests.moderation.api_helpers import post_payload

BODY_ENDPOINTS = [
    ("post", "/api/v1/posts"),
    ("post", "/api/v1/posts/batch"),
    ("post", "/api/v1/reports"),
    ("put", "/api/v1/authors/u-1"),
    ("post", "/api/v1/blocklist/domains"),
    ("post", "/api/v1/blocklist/ips"),
    ("post", "/api/v1/notes"),
]

# The crashes found by hand, as raw bodies: every one must answer a 4xx in the error shape.
HAND_BODIES = [
    b'{"\\udc00": 1}',
    b'{"\\ud800": 1}',
    b'{"\\u0000": 1}',
    b'{"author": {"\\udfff": 1}}',
    b'{"posts": [{"\\udc00": 1}]}',
    b'{"text": "\xc0\xaf"}',
    b'{"text": "\xc0\x80"}',
    b'{"text": "\xed\xa0\x80"}',
    b'{"text": "\xff"}',
    b'{"text": "\xe2\x82"}',
    b'{"x": NaN}',
    b"[" * 100_000 + b"]" * 100_000,
]


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


def encoded(value: Any) -> bytes:
    # ensure_ascii writes lone surrogates as \\udc00 escapes, as a client's encoder does.
    return json.dumps(value).encode()


@st.composite
def hostile_bodies(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["bytes", "json", "post_with_hostile_key", "batch", "spliced"]))
    if kind == "bytes":
        return draw(st.binary(max_size=256))
    if kind == "json":
        return encoded(draw(JSON_VALUES))
    if kind == "post_with_hostile_key":
        payload = post_payload(draw(st.text(min_size=1, max_size=8)))
        target = draw(st.sampled_from([payload, payload["author"], payload["preview"], payload["journey"][0]]))
        target[draw(KEYS)] = draw(JSON_VALUES)
        return encoded(payload)
    if kind == "batch":
        items = draw(st.lists(st.one_of(JSON_VALUES, st.just(post_payload("fz"))), min_size=1, max_size=5))
        return encoded({"posts": items})
    body = encoded(draw(JSON_VALUES))
    at = draw(st.integers(min_value=0, max_value=len(body)))
    return body[:at] + draw(RAW_FRAGMENTS) + body[at:]
