"""The one door from the pipeline to the models: the Triton client's types and factory.

The "triton" engineer's scoring.triton_client is the real implementation. Until it is on
main, an interim copy of its published interface keeps the pipeline importable; the interim
client refuses to score (TritonUnavailable) so nothing is decided without a model."""

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


__all__ = ["ScoringClient", "ScoringInput", "ScoringOutput", "TritonError", "TritonUnavailable", "get_client"]
