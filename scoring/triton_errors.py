"""The two failures of a Triton call, shared by the client and the multi-server pool (which
fails over on TritonUnavailable); scoring.triton_client re-exports them."""

from __future__ import annotations


class TritonError(Exception):
    """Triton rejected the request or a model failed on it: retrying will not help."""


class TritonUnavailable(TritonError):
    """Triton cannot answer now (refused, timed out, not ready, model not loaded): retryable.
    A subclass of TritonError, so `except TritonError` sees every Triton failure."""
