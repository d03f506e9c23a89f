"""Fixtures of the API tests, loaded as a plugin: pytest_plugins = ["tests.moderation.api_fixtures"]."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.factories import SourceFactory, create_api_key
from tests.moderation.api_helpers import ApiCaller
from tests.redis_keys import clear_cache_keys


@pytest.fixture
def clean_throttle() -> Iterator[None]:
    clear_cache_keys()
    yield


@pytest.fixture
def api(db: None, clean_throttle: None) -> ApiCaller:
    source = SourceFactory()
    return ApiCaller(source, create_api_key(source))


@pytest.fixture
def other_api(db: None) -> ApiCaller:
    source = SourceFactory()
    return ApiCaller(source, create_api_key(source))
