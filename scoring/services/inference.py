"""The one door from the pipeline to the models: the Triton client's types and factory.

Everything the pipeline needs from scoring.triton_client goes through here, so tests can swap
the client (a fake with the same `score`/`is_ready`) in one place."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from django.conf import settings

from contracts.triton import latest_version, served_models
from scoring.serving import (
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


def loaded_models() -> tuple[str, ...]:
    """The models this deployment's Triton loads (settings.TRITON_STANDALONE_MODELS)."""
    return served_models(standalone=settings.TRITON_STANDALONE_MODELS)


def expected_versions() -> dict[str, str | None]:
    """model -> the version Triton must serve, for each model it loads: the newest version folder
    in settings.TRITON_MODEL_REPOSITORY (`version_policy latest 1`). None (any version) where
    this process does not see the repository (a web container without the volume) or the model
    has no version there yet."""
    repository = Path(settings.TRITON_MODEL_REPOSITORY)
    visible = repository.is_dir()
    found = {m: latest_version(m, repository=repository) if visible else None for m in loaded_models()}
    return {m: None if v is None else str(v) for m, v in found.items()}


def serving_ready(*, timeout_s: float) -> bool:
    """A Triton server is ready and serves the expected versions (config.health's check)."""
    return get_client(timeout_s=timeout_s).ready_with(expected_versions())


__all__ = [
    "ScoringClient",
    "ScoringInput",
    "ScoringOutput",
    "TritonError",
    "TritonUnavailable",
    "get_client",
    "get_client_with_timeout",
    "loaded_models",
    "serving_ready",
]
