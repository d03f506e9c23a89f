"""Several Triton servers behind one client: round robin, and failover when one dies.

settings.TRITON_URLS (comma-separated) lists the servers; with one server (TRITON_URL alone,
the default) scoring.serving.get_client() returns a plain TritonScoringClient and nothing here
runs, so the single-server scoring path costs what it always did. The pool knows its servers
only through the ServerClient protocol below: it imports no client module.

Every call of `score` goes to the next server in turn. A server that fails with
TritonUnavailable (refused, timed out, not ready, model not loaded) is marked down for
TRITON_DOWN_S seconds in this process and the same rows go to the next server at once; only
when every server failed does the call raise TritonUnavailable, and the Celery task's own
retry budget (scoring.tasks.RETRY_OPTIONS) takes over as with one server. Servers marked down
are skipped while another is up; when all are marked down, the one whose mark ends first is
tried, so a call never fails without having tried a server. Re-running a batch on another
server is harmless: inference writes nothing, and the Score rows are written once by the
caller afterwards.

TritonError (the request itself is wrong) is not failed over: another server would reject it
too.

Model control (load_model, unload_model) goes to every server, since each serves the same
repository; reads of state (versions, statistics, metrics) come from the first server that
answers.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from scoring.triton_errors import TritonUnavailable
from scoring.triton_types import ScoringInput, ScoringOutput

T = TypeVar("T")


class ServerClient(Protocol):
    """What the pool needs of one server's client (scoring.triton_client.TritonScoringClient)."""

    url: str
    timeout_s: float

    def with_timeout(self, timeout_s: float) -> ServerClient: ...
    def score(self, inputs: Sequence[ScoringInput], *, mode: str = "batched") -> list[ScoringOutput]: ...
    def is_ready(self) -> bool: ...
    def ready_with(self, expected: Mapping[str, str | None] | None) -> bool: ...
    def repository_index(self) -> list[dict[str, Any]]: ...
    def model_versions(self) -> dict[str, str]: ...
    def statistics(self, name: str = "") -> list[dict[str, Any]]: ...
    def metrics_text(self) -> str: ...
    def load_model(self, name: str) -> None: ...
    def unload_model(self, name: str) -> None: ...
    def close(self) -> None: ...


@dataclass
class _Health:
    """Down marks shared by a pool and its with_timeout() clones (one per process)."""

    down_s: float
    down_until: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    turn: Any = field(default_factory=itertools.count)

    def mark_down(self, url: str) -> None:
        with self.lock:
            self.down_until[url] = time.monotonic() + self.down_s

    def mark_up(self, url: str) -> None:
        if url in self.down_until:
            with self.lock:
                self.down_until.pop(url, None)

    def order(self, urls: Sequence[str]) -> list[int]:
        """Indexes of the servers to try, in this call's order: the up ones starting at the
        next turn, or, when all are down, the one whose mark ends first."""
        start = next(self.turn) % len(urls)
        rotated = [(start + i) % len(urls) for i in range(len(urls))]
        now = time.monotonic()
        up = [i for i in rotated if self.down_until.get(urls[i], 0.0) <= now]
        if up:
            return up
        return [min(rotated, key=lambda i: self.down_until.get(urls[i], 0.0))]


class TritonPool:
    """The TritonScoringClient interface over several servers (see the module docstring)."""

    def __init__(self, clients: Sequence[ServerClient], *, down_s: float) -> None:
        if not clients:
            raise ValueError("a pool needs at least one server")
        self.clients = list(clients)
        self.urls = [c.url for c in self.clients]
        self._health = _Health(down_s=down_s)

    @property
    def url(self) -> str:
        return ",".join(self.urls)

    @property
    def timeout_s(self) -> float:
        return self.clients[0].timeout_s

    def with_timeout(self, timeout_s: float) -> TritonPool:
        clone = TritonPool.__new__(TritonPool)
        clone.clients = [c.with_timeout(timeout_s) for c in self.clients]
        clone.urls = self.urls
        clone._health = self._health
        return clone

    def down(self) -> list[str]:
        """Servers currently marked down in this process."""
        now = time.monotonic()
        return [u for u in self.urls if self._health.down_until.get(u, 0.0) > now]

    def _failover(self, call: Callable[[ServerClient], T]) -> T:
        last: TritonUnavailable | None = None
        for index in self._health.order(self.urls):
            client = self.clients[index]
            try:
                result = call(client)
            except TritonUnavailable as exc:
                self._health.mark_down(client.url)
                last = exc
                continue
            self._health.mark_up(client.url)
            return result
        assert last is not None
        raise TritonUnavailable(f"no Triton server answered: {last}") from last

    # ---- scoring --------------------------------------------------------------------------
    def score(self, inputs: Sequence[ScoringInput], *, mode: str = "batched") -> list[ScoringOutput]:
        if not inputs:
            return []
        return self._failover(lambda c: c.score(inputs, mode=mode))

    # ---- health and state -----------------------------------------------------------------
    def is_ready(self) -> bool:
        return any(self.clients[i].is_ready() for i in self._health.order(self.urls))

    def ready_with(self, expected: Mapping[str, str | None] | None) -> bool:
        """Some server is ready and serves `expected` (model -> version)."""
        now = time.monotonic()
        by_health = sorted(range(len(self.clients)), key=lambda i: self._health.down_until.get(self.urls[i], 0.0) > now)
        return any(self.clients[i].ready_with(expected) for i in by_health)

    def repository_index(self) -> list[dict[str, Any]]:
        return self._failover(lambda c: c.repository_index())

    def model_versions(self) -> dict[str, str]:
        return self._failover(lambda c: c.model_versions())

    def statistics(self, name: str = "") -> list[dict[str, Any]]:
        return self._failover(lambda c: c.statistics(name))

    def metrics_text(self) -> str:
        return self._failover(lambda c: c.metrics_text())

    # ---- control: every server ---------------------------------------------------------------
    def load_model(self, name: str) -> None:
        for client in self.clients:
            client.load_model(name)

    def unload_model(self, name: str) -> None:
        for client in self.clients:
            client.unload_model(name)

    def close(self) -> None:
        for client in self.clients:
            client.close()
