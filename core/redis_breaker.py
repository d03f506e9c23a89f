"""A circuit breaker on the cache's Redis connections.

A Redis that hangs (a stopped process, a full network queue, a black-holed route) answers
nothing and refuses nothing: every call waits its socket timeout (1 s here). The request path
makes up to three such calls (API-key lookup, throttle, the scoring kick), all of which already
fall back when Redis fails (PostgreSQL, fail-open, a direct publish), so a hung Redis made every
API request about three seconds slower while losing nothing, and eight gunicorn threads then
served under three requests a second.

With the breaker, the first call that times out opens the circuit for this process and this
server for REDIS_BREAKER_OPEN_S seconds: calls in that window fail at once with `CircuitOpen`
(a redis ConnectionError, which every caller already handles as "Redis is down"). After the
window one call tries again (half-open): if it times out too, the circuit opens again. So a
hung Redis costs each process one timeout per window, not one per call. Only timeouts trip it:
a refused connection (Redis stopped cleanly) already fails in microseconds.

Used through the cache's OPTIONS (`redis_cache_options`); the Celery broker's connections are
kombu's and are not wrapped; ingest's publishes have a circuit of their own here
(scoring.receivers.PUBLISH_CIRCUIT)."""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import redis
from redis.connection import Connection, SSLConnection, UnixDomainSocketConnection

# Seconds a tripped circuit stays open when settings do not say (REDIS_BREAKER_OPEN_S).
OPEN_S = 5.0

_lock = threading.Lock()
_open_until: dict[str, float] = {}  # server -> time.monotonic() until which calls fail fast


class CircuitOpen(redis.ConnectionError):
    """Redis timed out recently: this call was not sent."""


def _server(connection: Any) -> str:
    path = getattr(connection, "path", "")
    return f"unix:{path}" if path else f"{connection.host}:{connection.port}"


def circuit_open(server: str) -> bool:
    return time.monotonic() < _open_until.get(server, 0.0)


def open_s() -> float:
    from django.conf import settings

    return float(getattr(settings, "REDIS_BREAKER_OPEN_S", OPEN_S))


def trip(server: str, *, seconds: float | None = None) -> None:
    """Open `server`'s circuit for `seconds` (default REDIS_BREAKER_OPEN_S). `server` is any
    name: ingest's publishes use one of their own (moderation.services.ingest)."""
    with _lock:
        _open_until[server] = time.monotonic() + (open_s() if seconds is None else seconds)


def reset() -> None:
    """Close every circuit (tests, and a process that knows Redis is back)."""
    with _lock:
        _open_until.clear()


class BreakerMixin:
    """Fail fast while this server's circuit is open; open it on a timeout."""

    @functools.cached_property
    def _breaker_server(self) -> str:  # once per connection, not per command
        return _server(self)

    def _check_circuit(self) -> None:
        if circuit_open(self._breaker_server):
            raise CircuitOpen(f"Redis at {self._breaker_server} timed out less than {open_s():g}s ago; not tried")

    @contextlib.contextmanager
    def _tripping_on_timeout(self) -> Iterator[None]:
        try:
            yield
        except redis.TimeoutError:
            trip(self._breaker_server)
            raise

    def connect(self) -> None:
        self._check_circuit()
        with self._tripping_on_timeout():
            super().connect()  # type: ignore[misc]

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        self._check_circuit()
        with self._tripping_on_timeout():
            super().send_packed_command(command, check_health)  # type: ignore[misc]

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        with self._tripping_on_timeout():
            return super().read_response(*args, **kwargs)  # type: ignore[misc]


class BreakerConnection(BreakerMixin, Connection):
    pass


class BreakerSSLConnection(BreakerMixin, SSLConnection):
    pass


class BreakerUnixDomainSocketConnection(BreakerMixin, UnixDomainSocketConnection):
    pass


def connection_class_for(url: str) -> type[Connection] | type[UnixDomainSocketConnection]:
    """The breaker's connection class for a redis://, rediss:// or unix:// URL (the class
    redis-py would pick for it, with the breaker)."""
    scheme = urlsplit(url).scheme
    if scheme == "rediss":
        return BreakerSSLConnection
    if scheme == "unix":
        return BreakerUnixDomainSocketConnection
    return BreakerConnection


def redis_cache_options(url: str) -> dict[str, Any]:
    """OPTIONS of a django.core.cache.backends.redis.RedisCache at `url`: short socket timeouts
    (the request path never waits long on its cache) and the breaker's connection class."""
    return {"socket_connect_timeout": 1, "socket_timeout": 1, "connection_class": connection_class_for(url)}
