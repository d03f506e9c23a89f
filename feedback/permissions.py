"""Who may use the ML pages, in the dashboard's roles (moderation.permissions): reading the
registry, datasets, run reports and calibration needs a dashboard role that may see metrics
(analyst, moderator, admin); retraining, promotion, rollback, thresholds, dataset snapshots and
imports need the admin role (superusers count as admins)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied

from moderation.permissions import CAN_ADMINISTER, CAN_VIEW_METRICS, can_administer, has_any_role

CAN_VIEW_ML = CAN_VIEW_METRICS
CAN_ADMINISTER_ML = CAN_ADMINISTER


def can_administer_ml(user: Any) -> bool:
    return can_administer(user)


def can_view_ml(user: Any) -> bool:
    return has_any_role(user, CAN_VIEW_ML)


def check_ml_admin(user: Any) -> None:
    """Services that change models or thresholds call this, so no entry point can skip it."""
    if not can_administer_ml(user):
        raise PermissionDenied("Only admins may retrain, promote, roll back or change thresholds.")
