"""Interim stand-in for scoring.triton_client's interface (see scoring.services.inference)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


class TritonUnavailable(Exception):
    """The server is down, not ready or timed out: retry later."""


class TritonError(Exception):
    """The server answered with an error (bad input, model failure): retrying will not help."""


@dataclass(frozen=True)
class ScoringInput:
    text: str
    preview_text: str
    link: Sequence[float]
    behaviour: Sequence[float]


@dataclass(frozen=True)
class ScoringOutput:
    text_prob: float
    preview_prob: float | None
    link_prob: float
    behaviour_prob: float
    final_prob: float
    contributions: dict[str, dict[str, float]] = field(default_factory=dict)
    model_versions: dict[str, str] = field(default_factory=dict)


class TritonScoringClient:
    def __init__(self, url: str | None = None, *, timeout_s: float | None = None) -> None:
        self.url, self.timeout_s = url, timeout_s

    def score(self, inputs: Sequence[ScoringInput]) -> list[ScoringOutput]:
        raise TritonUnavailable("scoring.triton_client is not installed yet")

    def is_ready(self) -> bool:
        return False


def get_client() -> TritonScoringClient:
    return TritonScoringClient()
