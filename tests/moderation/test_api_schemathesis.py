"""Property-based run of every documented operation (schemathesis over our OpenAPI schema):
whatever schemathesis generates - valid or not - the API never answers 5xx."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from schemathesis.checks import not_a_server_error

from moderation.api.throttling import ApiKeyRateThrottle
from tests.factories import create_api_key

schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", get_wsgi_application())


@pytest.fixture
def api_key(db, monkeypatch) -> Iterator[str]:
    monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "100000/min"})
    # A raw WSGI call closes "old" connections at request end, which would close the test's
    # transaction; Django's test client unhooks the same signals.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield create_api_key()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@schema.parametrize()
@hsettings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_generated_request_is_a_server_error(case, api_key):
    case.call_and_validate(headers={"Authorization": f"Api-Key {api_key}"}, checks=[not_a_server_error])
