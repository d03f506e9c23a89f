"""Who may use the ML pages. Mirrors moderation.permissions (the dashboard's roles): reading the
registry, datasets and run reports needs any dashboard role; retraining, promotion, rollback,
thresholds, dataset creation and import need the admin role (superusers count as admins)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied

ADMIN_GROUP = "admin"
VIEW_GROUPS = frozenset({"admin", "moderator", "analyst"})


def _group_names(user: Any) -> frozenset[str]:
    cached = getattr(user, "_feedback_groups", None)
    if cached is None:
        cached = frozenset(user.groups.values_list("name", flat=True))
        user._feedback_groups = cached
    return cached


def can_administer_ml(user: Any) -> bool:
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    return bool(user.is_superuser or ADMIN_GROUP in _group_names(user))


def can_view_ml(user: Any) -> bool:
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    return bool(user.is_superuser or _group_names(user) & VIEW_GROUPS)


def check_ml_admin(user: Any) -> None:
    """Services that change models or thresholds call this, so no entry point can skip it."""
    if not can_administer_ml(user):
        raise PermissionDenied("Only admins may retrain, promote, roll back or change thresholds.")
