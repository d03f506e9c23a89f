"""Fixtures shared by the scoring tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.redis_keys import clear_cache_keys


@pytest.fixture
def clean_cache() -> Iterator[None]:
    """An empty cache (this suite's own Redis database, CACHE_URL) before and after the test:
    claims, done markers and the inline pending list live there."""
    clear_cache_keys()
    yield
    clear_cache_keys()
