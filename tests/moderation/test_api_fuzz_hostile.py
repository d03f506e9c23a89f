"""Hypothesis over raw bytes and JSON with hostile keys and values, on every API endpoint that
takes a body: never a 5xx, and every 4xx in the one JSON error shape with a bounded body.

Complements tests/test_api_fuzz.py (schemathesis, from the schema): these bodies ignore the
schema on purpose - lone surrogates, NUL, overlong UTF-8, huge keys, deep nesting
(tests/moderation/hostile_bodies.py; benchmarks/hostile_input.py sends many more)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings

from tests.moderation.api_helpers import ApiCaller, post_payload
from tests.moderation.hostile_bodies import BODY_ENDPOINTS, encoded, hostile_bodies

pytest_plugins = ["tests.moderation.api_fixtures"]
pytestmark = pytest.mark.django_db

# Error bodies echo at most a prefix of the input: far below the largest body sent here.
MAX_ERROR_BYTES = 64 * 1024


@pytest.mark.parametrize(("method", "path"), BODY_ENDPOINTS)
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
    @example(body=encoded({**post_payload(), "\udc00": 1}))
    @example(body=encoded({"posts": [post_payload("ok"), {"\ud800": 1}, post_payload("bad", text="\udc00")]}))
    @example(body=encoded({"k" * 1_000_000: 1}))
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
