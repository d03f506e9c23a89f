"""Prometheus /metrics access, request ids and JSON logs (the counters after real ingest and
scoring: tests/integration/test_metrics_e2e.py)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from config.request_id import RequestIdFilter


# --- access ----------------------------------------------------------------------------------
def test_metrics_refused_outside_the_allowed_networks(client, db):
    response = client.get("/metrics", REMOTE_ADDR="10.9.8.7")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"


def test_metrics_for_an_allowed_network_or_the_bearer_token(client, db, settings):
    settings.METRICS_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    assert client.get("/metrics", REMOTE_ADDR="10.9.8.7").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="192.0.2.1").status_code == 403

    settings.METRICS_BEARER_TOKEN = "scrape-token-1"
    ok = client.get("/metrics", REMOTE_ADDR="192.0.2.1", HTTP_AUTHORIZATION="Bearer scrape-token-1")
    assert ok.status_code == 200
    assert ok["Content-Type"].startswith("text/plain")
    wrong = client.get("/metrics", REMOTE_ADDR="192.0.2.1", HTTP_AUTHORIZATION="Bearer scrape-token-2")
    assert wrong.status_code == 403


# --- request ids and JSON logs -----------------------------------------------------------------
@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """The root logger also writes through the JSON formatter of settings.LOGGING."""
    from config.logs import json_formatter

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(json_formatter())
    handler.addFilter(RequestIdFilter())
    root = logging.getLogger()
    root.addHandler(handler)
    yield stream
    root.removeHandler(handler)


def json_lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


def test_request_id_honoured_and_on_the_log_lines(client, db, json_log):
    response = client.get("/api/v1/posts/none", HTTP_X_REQUEST_ID="req-abc.123")
    assert response.status_code == 401
    assert response["X-Request-ID"] == "req-abc.123"
    lines = [line for line in json_lines(json_log) if line.get("logger") == "django.request"]
    assert lines, json_log.getvalue()
    assert {line["request_id"] for line in lines} == {"req-abc.123"}
    assert all(line["level"] == "WARNING" and "time" in line for line in lines)


def test_request_id_made_when_missing_or_unsafe(client, db):
    made = client.get("/healthz")["X-Request-ID"]
    assert len(made) == 32
    unsafe = client.get("/healthz", HTTP_X_REQUEST_ID='x" level=ERROR')["X-Request-ID"]
    assert unsafe != 'x" level=ERROR' and len(unsafe) == 32
