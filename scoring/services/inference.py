"""The one door from the pipeline to the models: the Triton client's types and factory.

Everything the pipeline needs from scoring.triton_client goes through here, so tests can swap
the client (a fake with the same `score`/`is_ready`) in one place."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from scoring.triton_client import (
    ScoringInput,
    ScoringOutput,
    TritonError,
    TritonUnavailable,
    get_client,
)


class ScoringClient(Protocol):
    def score(self, inputs: Sequence[ScoringInput]) -> list[ScoringOutput]: ...

    def is_ready(self) -> bool: ...


def get_client_with_timeout(timeout_s: float) -> ScoringClient:
    """The process-wide client with a per-call timeout, for the inline pre-publish check
    (shares the connection; a new gRPC channel per request would eat the budget)."""
    return get_client(timeout_s=timeout_s)


__all__ = [
    "ScoringClient",
    "ScoringInput",
    "ScoringOutput",
    "TritonError",
    "TritonUnavailable",
    "get_client",
    "get_client_with_timeout",
]
