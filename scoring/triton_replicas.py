"""Model control on every Triton replica: load new versions on each server and check that each
serves them, before a promotion or rollback is reported done.

Scoring reaches Triton through one address that spreads requests (on Kubernetes a headless
Service behind TRITON_URL=dns:///...:8001 with gRPC round robin), so a `load_model` sent
through it reaches one replica and the others keep serving the old version. Control therefore
goes to each replica by its own address:

- settings.TRITON_REPLICAS (comma-separated) lists them; empty means the scoring servers
  (TRITON_URLS, else TRITON_URL).
- An entry written `dns:///host:port` stands for every address `host` resolves to now: a
  headless Service answers with the IP of every ready Triton pod. A replica that starts later
  loads the newest version folders of the shared repository at start (`--load-model=*`).

`load_everywhere` loads the models on each replica in order (sub-models first, the entry point
last) and then reads each replica's served versions back; any replica that failed to load, or
serves another version afterwards, makes it raise ReplicasNotServing naming them. It never
stops half-way: every replica is tried, so the caller knows the whole picture.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scoring.triton_errors import TritonUnavailable

logger = logging.getLogger(__name__)

Resolver = Callable[..., list[tuple[Any, ...]]]


class ReplicasNotServing(TritonUnavailable):
    """Some replicas did not load, or do not serve, the expected versions."""

    def __init__(self, failures: Mapping[str, str]) -> None:
        self.failures = dict(failures)
        detail = "; ".join(f"{url}: {why}" for url, why in self.failures.items())
        super().__init__(f"{len(self.failures)} Triton replica(s) not serving the new versions: {detail}")


def _expand(entry: str, resolve: Resolver) -> list[str]:
    if not entry.startswith("dns:"):
        return [entry]
    hostport = entry.split(":", 1)[1].lstrip("/")
    host, _, port = hostport.rpartition(":")
    found = resolve(host, int(port), type=socket.SOCK_STREAM)
    addresses = sorted({str(sockaddr[0]) for *_, sockaddr in found})
    return [f"[{a}]:{port}" if ":" in a else f"{a}:{port}" for a in addresses]


def replica_urls(*, resolve: Resolver = socket.getaddrinfo) -> list[str]:
    """The address of every Triton replica now (see the module docstring)."""
    from django.conf import settings

    from scoring.serving import server_urls

    entries = [u.strip() for u in getattr(settings, "TRITON_REPLICAS", []) or [] if u.strip()] or server_urls()
    urls: list[str] = []
    for entry in entries:
        try:
            expanded = _expand(entry, resolve)
        except (OSError, ValueError) as exc:
            raise TritonUnavailable(f"cannot resolve the Triton replicas of {entry}: {exc}") from exc
        urls += [u for u in expanded if u not in urls]
    if not urls:
        raise TritonUnavailable(f"no Triton replica found in {entries}")
    return urls


def _load_one(url: str, models: Sequence[str], expected: Mapping[str, int] | None) -> str | None:
    """None when `url` loaded `models` and serves `expected`; else why not."""
    from scoring.serving import TritonError, TritonScoringClient

    client = TritonScoringClient(url)
    try:
        for name in models:
            client.load_model(name)
        if expected is None:
            return None
        served = client.model_versions()
    except (TritonUnavailable, TritonError) as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        client.close()
    wrong = {m: served.get(m) for m, v in expected.items() if served.get(m) != str(v)}
    if wrong:
        return "serves " + ", ".join(f"{m} {v or 'nothing'} instead of {expected[m]}" for m, v in wrong.items())
    return None


def load_everywhere(models: Sequence[str], *, expected: Mapping[str, int] | None = None) -> list[str]:
    """Load `models` (in this order) on every replica and, with `expected` (model -> version),
    check that each replica serves those versions. Returns the replicas' addresses; raises
    ReplicasNotServing naming every replica that failed."""
    urls = replica_urls()
    failures = {url: why for url in urls if (why := _load_one(url, models, expected)) is not None}
    if failures:
        raise ReplicasNotServing(failures)
    logger.info("scoring.replicas_loaded", extra={"replicas": urls, "models": list(models)})
    return urls
