"""The live decision thresholds, for colouring scores the way the policy treats them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Thresholds:
    remove_threshold: float
    approve_threshold: float


def live_thresholds() -> Thresholds:
    """The active policy's auto-remove and auto-approve thresholds (one indexed read): a score at
    or above remove is red, between the two amber (queued for review), below approve green."""
    from scoring.api import policy_active

    policy = policy_active()
    return Thresholds(
        remove_threshold=float(policy.remove_threshold), approve_threshold=float(policy.approve_threshold)
    )
