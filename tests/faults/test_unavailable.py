"""The API with a backing service down, for real (a port nothing listens on): PostgreSQL or the
cache Redis unreachable -> 503 + Retry-After in the one error shape, never a 500; the throttle
fails open (logged) when Redis is down; the broker down -> ingest still answers 201 (tested in
tests/moderation/test_api_posts.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
import redis
from django.db import InterfaceError, OperationalError, connection
from rest_framework.test import APIClient

from moderation.models import Post
from tests.factories import SourceFactory, create_api_key
from tests.moderation.api_helpers import ApiCaller, post_payload

pytest_plugins = ["tests.moderation.api_fixtures"]

DEAD = "127.0.0.1:1"  # nothing listens on port 1: connections are refused at once


@pytest.fixture
def api(db: None, clean_throttle: None) -> ApiCaller:
    """The API tests' caller (tests/faults/conftest.py's `api` is the integration one)."""
    source = SourceFactory()
    return ApiCaller(source, create_api_key(source))


def assert_unavailable(response: Any) -> None:
    assert response.status_code == 503, response.content
    assert response["Retry-After"].isdigit() and int(response["Retry-After"]) > 0
    body = response.json()
    assert body["error"]["code"] == "unavailable"
    assert set(body["error"]) >= {"code", "message", "fields"}


@pytest.fixture
def dead_database(django_db_blocker: Any) -> Iterator[None]:
    """This process's connection pointed at a port nothing listens on (the test DB untouched)."""
    with django_db_blocker.unblock():
        connection.close()
        saved = dict(connection.settings_dict)
        connection.settings_dict.update({"HOST": "127.0.0.1", "PORT": "1"})
        try:
            yield
        finally:
            connection.close()
            connection.settings_dict.clear()
            connection.settings_dict.update(saved)


@pytest.fixture
def dead_cache(settings: Any) -> None:
    """The cache (throttle counters, scoring claims) on a port nothing listens on."""
    caches = {**settings.CACHES}
    caches["default"] = {**caches["default"], "LOCATION": f"redis://{DEAD}/0"}
    settings.CACHES = caches  # Django resets its cache handlers on this setting change


def test_database_down_answers_503_not_500(dead_database: None, caplog: pytest.LogCaptureFixture):
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION="Api-Key mk_anything")
    response = client.post("/api/v1/posts", post_payload(), format="json")
    assert_unavailable(response)
    assert "api.service_unavailable" in caplog.text


def test_database_down_on_reads_answers_503(dead_database: None):
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_X_API_KEY="mk_anything")
    assert_unavailable(client.get("/api/v1/posts/p-1"))


@pytest.mark.django_db
@pytest.mark.parametrize("error", [OperationalError("server closed the connection"), InterfaceError("closed")])
def test_database_error_mid_request_answers_503(api: ApiCaller, error: Exception):
    with mock.patch("api.views.post_ingest", side_effect=error):
        response = api.post("/api/v1/posts", post_payload())
    assert_unavailable(response)


@pytest.mark.django_db
def test_cache_down_mid_request_answers_503(api: ApiCaller):
    with mock.patch("api.views.post_ingest", side_effect=redis.ConnectionError("refused")):
        response = api.post("/api/v1/posts", post_payload())
    assert_unavailable(response)


@pytest.mark.django_db
def test_throttle_fails_open_when_redis_is_down(api: ApiCaller, dead_cache: None, caplog: pytest.LogCaptureFixture):
    response = api.post("/api/v1/posts", post_payload())
    assert response.status_code == 201, response.content
    assert Post.objects.filter(external_id="p-1").exists()
    assert "api.throttle_unavailable" in caplog.text


@pytest.mark.django_db
def test_throttle_still_limits_when_redis_is_up(api: ApiCaller, settings: Any):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"api_key": "2/min"}}
    from api.throttling import ApiKeyRateThrottle

    with mock.patch.object(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "2/min"}):
        codes = [api.post("/api/v1/posts", post_payload(external_id=f"p-{i}")).status_code for i in range(3)]
    assert codes == [201, 201, 429]


@pytest.mark.django_db
def test_a_hung_cache_costs_the_api_one_timeout_not_one_per_call(api: ApiCaller, settings: Any, caplog: Any):
    """The cache Redis accepts connections and never answers (core.redis_breaker). Each request
    makes three cache calls (API key, throttle, scoring kick), each with its own fallback: every
    post is stored and answered 201, and only the first call waits its socket timeout; the
    others fail at once while the circuit is open (without the breaker: a timeout per call,
    a new connection each)."""
    from tests.fixtures.hung_server import hung_server

    with hung_server() as server, mock.patch("scoring.tasks.score_batch.delay"):
        caches = {**settings.CACHES}
        caches["default"] = {
            **caches["default"],
            "LOCATION": f"{server.url}/0",
            "OPTIONS": {**caches["default"]["OPTIONS"], "socket_timeout": 0.3, "socket_connect_timeout": 0.3},
        }
        settings.CACHES = caches  # Django resets its cache handlers on this setting change
        codes = [api.post("/api/v1/posts", post_payload(external_id=f"p-{i}")).status_code for i in range(3)]
        accepted = server.accepted
    assert codes == [201, 201, 201]
    assert Post.objects.filter(external_id__in=["p-0", "p-1", "p-2"]).count() == 3
    assert accepted == 1
    assert "not tried" in caplog.text  # the fast failures are logged by each fallback
