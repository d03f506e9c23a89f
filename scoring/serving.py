"""The one serving entry point: every caller that talks to Triton (the scoring pipeline, the
health checks, modelops' commands, feedback's promotion, the benchmarks) gets its client here.

    from scoring.serving import ScoringInput, get_client
    out = get_client().score([ScoringInput(text=..., preview_text="", link=vec, behaviour=vec)])

get_client() is the process-wide client for the current settings: one server (TRITON_URL) is a
scoring.triton_client.TritonScoringClient; several (TRITON_URLS) a scoring.triton_pool.TritonPool
with the same interface, spreading calls over them and failing over. client_for(url) is a
client of one given server, not cached (tools that measure or drive one server). Both modules
below import neither this one nor each other: the cache lives here, above them."""

from __future__ import annotations

import atexit
import os
import threading

from django.conf import settings

from scoring.triton_client import TritonScoringClient, preload
from scoring.triton_errors import TritonError, TritonUnavailable
from scoring.triton_pool import TritonPool
from scoring.triton_types import ScoringInput, ScoringOutput

__all__ = [
    "ScoringInput",
    "ScoringOutput",
    "TritonError",
    "TritonPool",
    "TritonScoringClient",
    "TritonUnavailable",
    "client_for",
    "get_client",
    "preload",
    "reset_clients",
    "server_urls",
]

_clients: dict[tuple[int, str, str, str, float, str], TritonScoringClient | TritonPool] = {}
_lock = threading.Lock()


def server_urls() -> list[str]:
    """settings.TRITON_URLS when set (several servers), else [settings.TRITON_URL]."""
    urls = [u.strip() for u in getattr(settings, "TRITON_URLS", []) or [] if u.strip()]
    return urls or [str(settings.TRITON_URL)]


def get_client(*, timeout_s: float | None = None) -> TritonScoringClient | TritonPool:
    """The process-wide client for the current settings (recreated after fork or a settings
    change); `timeout_s` overrides settings.TRITON_TIMEOUT_S (one cached client per value)."""
    urls = server_urls()
    key = (
        os.getpid(),
        str(settings.TRITON_URL),
        ",".join(urls),
        str(settings.TRITON_PROTOCOL),
        float(settings.TRITON_TIMEOUT_S),
        str(settings.TRITON_METRICS_PORT),
    )
    with _lock:
        client = _clients.get(key)
        if client is None:
            if len(urls) == 1:
                client = TritonScoringClient(None if urls[0] == settings.TRITON_URL else urls[0])
            else:
                client = TritonPool(
                    [TritonScoringClient(url) for url in urls], down_s=float(getattr(settings, "TRITON_DOWN_S", 10.0))
                )
            _clients[key] = client
    return client if timeout_s is None else client.with_timeout(timeout_s)


def client_for(
    url: str | None = None,
    *,
    protocol: str | None = None,
    timeout_s: float | None = None,
    metrics_url: str | None = None,
) -> TritonScoringClient:
    """A client of one server, made for the caller and not cached (close it when done);
    defaults from settings, as get_client's."""
    return TritonScoringClient(url, protocol=protocol, timeout_s=timeout_s, metrics_url=metrics_url)


def reset_clients() -> None:
    """Close and forget the cached clients (tests that change the settings; process exit)."""
    with _lock:
        for client in _clients.values():
            client.close()
        _clients.clear()


# Close channels before interpreter teardown (grpc's __del__ fails noisily after it).
atexit.register(reset_clients)
