"""The one door from the pipeline to the models: the Triton client's types and factory.

The "triton" engineer's scoring.triton_client is the real implementation. Until it is on
main, an interim copy of its published interface keeps the pipeline importable; the interim
client refuses to score (TritonUnavailable) so nothing is decided without a model."""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from typing import Protocol

from django.conf import settings

try:
    from scoring.triton_client import (
        ScoringInput,
        ScoringOutput,
        TritonError,
        TritonScoringClient,
        TritonUnavailable,
        get_client,
    )
except ImportError:  # pragma: no cover - removed once scoring.triton_client lands
    from scoring.services._interim_client import (
        ScoringInput,
        ScoringOutput,
        TritonError,
        TritonScoringClient,
        TritonUnavailable,
        get_client,
    )


class ScoringClient(Protocol):
    def score(self, inputs: Sequence[ScoringInput]) -> list[ScoringOutput]: ...

    def is_ready(self) -> bool: ...


_budget_clients: dict[tuple[int, str, float], ScoringClient] = {}
_lock = threading.Lock()


def get_client_with_timeout(timeout_s: float) -> ScoringClient:
    """A client whose calls give up after `timeout_s` (rounded up to 10 ms), for the inline
    pre-publish check. Cached per process and timeout: platforms send a fixed wait_ms, so
    there are few of them, and a new gRPC channel per request would eat the budget."""
    bucket = max(math.ceil(timeout_s * 100.0) / 100.0, 0.01)
    key = (os.getpid(), str(settings.TRITON_URL), bucket)
    with _lock:
        client = _budget_clients.get(key)
        if client is None:
            client = TritonScoringClient(timeout_s=bucket)
            _budget_clients[key] = client
        return client


__all__ = [
    "ScoringClient",
    "ScoringInput",
    "ScoringOutput",
    "TritonError",
    "TritonUnavailable",
    "get_client",
    "get_client_with_timeout",
]
