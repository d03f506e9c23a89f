"""The abuse rule: the abuse model's score can only make an action stricter.

The spam policy (scoring.services.policy) knows one harm; an insult is not spam, so its fused
spam score is low and it would be auto-approved. Here a post whose abuse score reaches the
source's queue threshold is never auto-approved, and one that reaches its remove threshold is
removed, whatever the spam policy, enforcement or author trust said. Thresholds per source,
else settings.ABUSE_QUEUE_THRESHOLD / ABUSE_REMOVE_THRESHOLD (the abuse model card's
defaults). A pure function of its inputs, so it is tested as a table.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from moderation.models import Source
from scoring.models import Action

_SEVERITY = {Action.APPROVE: 0, Action.QUEUE: 1, Action.REMOVE: 2}


@dataclass(frozen=True)
class AbuseThresholds:
    queue: float
    remove: float


def abuse_thresholds(source: Source) -> AbuseThresholds:
    queue = source.abuse_queue_threshold
    remove = source.abuse_remove_threshold
    return AbuseThresholds(
        queue=float(settings.ABUSE_QUEUE_THRESHOLD if queue is None else queue),
        remove=float(settings.ABUSE_REMOVE_THRESHOLD if remove is None else remove),
    )


def abuse_decide(action: Action, abuse: float | None, thresholds: AbuseThresholds) -> tuple[Action, str]:
    """(the action, why the abuse score changed it or ""). None (no abuse model): unchanged."""
    if abuse is None:
        return action, ""
    if abuse >= thresholds.remove:
        wanted, why = Action.REMOVE, f"abuse {abuse:.3f} >= remove {thresholds.remove:.3f}"
    elif abuse >= thresholds.queue:
        wanted, why = Action.QUEUE, f"abuse {abuse:.3f} >= queue {thresholds.queue:.3f}"
    else:
        return action, ""
    if _SEVERITY[Action(action)] >= _SEVERITY[wanted]:
        return action, ""
    return wanted, why
