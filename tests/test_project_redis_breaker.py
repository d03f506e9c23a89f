"""core.redis_breaker: a hung Redis costs one socket timeout per window, not one per call."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import pytest
import redis
from django.core.cache.backends.redis import RedisCache

from core import redis_breaker
from core.redis_breaker import BreakerConnection, BreakerSSLConnection, BreakerUnixDomainSocketConnection, CircuitOpen
from tests.fixtures.hung_server import hung_server


def cache_at(url: str) -> RedisCache:
    options = {**redis_breaker.redis_cache_options(url), "socket_timeout": 0.2, "socket_connect_timeout": 0.2}
    return RedisCache(url, {"OPTIONS": options})


def outcome(call: Callable[[], object]) -> str:
    try:
        call()
    except CircuitOpen:
        return "failed fast"
    except redis.TimeoutError:
        return "timed out"
    except redis.ConnectionError:
        return "refused"
    return "answered"


def wait_until_closed(server: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while redis_breaker.circuit_open(server):
        assert time.monotonic() < deadline, "the circuit did not close"
        time.sleep(0.02)


def test_a_timeout_opens_the_circuit_and_calls_fail_fast_until_it_closes(settings):
    settings.REDIS_BREAKER_OPEN_S = 0.5
    with hung_server() as server:
        cache = cache_at(server.url)
        outcomes = [outcome(lambda: cache.get("k")) for _ in range(4)]
        assert outcomes == ["timed out", "failed fast", "failed fast", "failed fast"]
        assert server.accepted == 1  # the fast failures never reached the server
        wait_until_closed(f"127.0.0.1:{server.port}")
        # Half-open: one call tries again; still hung, so the circuit opens again.
        assert [outcome(lambda: cache.set("k", 1)) for _ in range(2)] == ["timed out", "failed fast"]
        assert server.accepted == 2


def test_the_circuit_is_per_server():
    with hung_server() as hung:
        assert outcome(lambda: cache_at(hung.url).get("k")) == "timed out"
    from django.conf import settings

    healthy = cache_at(settings.CACHES["default"]["LOCATION"])
    assert outcome(lambda: healthy.set("breaker-probe", 1, timeout=5)) == "answered"


def test_a_refused_connection_does_not_open_the_circuit():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cache = cache_at(f"redis://127.0.0.1:{port}")
    assert [outcome(lambda: cache.get("k")) for _ in range(2)] == ["refused", "refused"]
    assert not redis_breaker.circuit_open(f"127.0.0.1:{port}")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis://127.0.0.1:6379/0", BreakerConnection),
        ("rediss://cache.example.com:6380/0", BreakerSSLConnection),
        ("unix:///run/redis.sock?db=0", BreakerUnixDomainSocketConnection),
    ],
)
def test_the_connection_class_keeps_the_urls_transport(url, expected):
    assert redis_breaker.connection_class_for(url) is expected
    pool = redis.ConnectionPool.from_url(url, connection_class=expected)
    assert pool.connection_class is expected


def test_the_configured_cache_uses_the_breaker():
    from django.core.cache import cache

    # cache._cache: Django's RedisCache internals, which django-stubs does not declare
    pool = cache._cache._get_connection_pool(write=True)  # type: ignore[attr-defined]
    assert issubclass(pool.connection_class, redis_breaker.BreakerMixin)
