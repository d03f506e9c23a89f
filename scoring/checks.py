"""Deployment checks (`manage.py check --deploy`) for the scoring settings."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Tags, Warning, register


@register(Tags.security, deploy=True)
def webhook_targets_check(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """Private webhook targets are for a developer's machine: in a deployment they let a
    source's callback URL reach the cluster's own services (server-side request forgery)."""
    if not settings.WEBHOOK_ALLOW_PRIVATE_TARGETS:
        return []
    return [
        Warning(
            "WEBHOOK_ALLOW_PRIVATE_TARGETS is on: webhook callbacks may be plain http and may "
            "reach private and loopback addresses.",
            hint="Unset WEBHOOK_ALLOW_PRIVATE_TARGETS in production; receivers must be public https URLs.",
            id="scoring.W001",
        )
    ]
