"""Dashboard roles. Three Django groups (created by a data migration):

- moderator: triage the queue, decide, bulk-act, block/unblock, suspend;
- admin: everything a moderator does, plus thresholds, retraining, API keys and users;
- analyst: read-only metrics, the audit log and its CSV export.

Superusers count as admins. Every dashboard view is wrapped in `role_required` (or uses
`RoleRequiredMixin`), so an anonymous user is sent to the login page and a logged-in user
without the role gets 403.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from django.contrib.auth.mixins import AccessMixin
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseBase


class Role(StrEnum):
    MODERATOR = "moderator"
    ADMIN = "admin"
    ANALYST = "analyst"


ALL_ROLES: frozenset[Role] = frozenset(Role)
# Who may do what. Views and templates ask these sets, never group names directly.
CAN_MODERATE: frozenset[Role] = frozenset({Role.MODERATOR, Role.ADMIN})
CAN_VIEW_METRICS: frozenset[Role] = frozenset({Role.ANALYST, Role.MODERATOR, Role.ADMIN})
CAN_VIEW_AUDIT: frozenset[Role] = frozenset({Role.ANALYST, Role.MODERATOR, Role.ADMIN})
CAN_ADMINISTER: frozenset[Role] = frozenset({Role.ADMIN})

_CACHE_ATTR = "_dashboard_roles"


def user_roles(user: Any) -> frozenset[Role]:
    """The user's roles, cached on the user object for the request."""
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return frozenset()
    cached: frozenset[Role] | None = getattr(user, _CACHE_ATTR, None)
    if cached is not None:
        return cached
    if user.is_superuser:
        roles = ALL_ROLES
    else:
        names = set(user.groups.values_list("name", flat=True))
        roles = frozenset(r for r in Role if r.value in names)
        if Role.ADMIN in roles:
            # An admin can do everything a moderator or analyst can.
            roles = ALL_ROLES
    setattr(user, _CACHE_ATTR, roles)
    return roles


def has_any_role(user: Any, allowed: frozenset[Role]) -> bool:
    return bool(user_roles(user) & allowed)


def can_moderate(user: Any) -> bool:
    return has_any_role(user, CAN_MODERATE)


def can_view_metrics(user: Any) -> bool:
    return has_any_role(user, CAN_VIEW_METRICS)


def can_administer(user: Any) -> bool:
    return has_any_role(user, CAN_ADMINISTER)


def check_role(user: Any, allowed: frozenset[Role]) -> None:
    """Raise PermissionDenied unless the user holds one of the roles (for services/tests)."""
    if not has_any_role(user, allowed):
        raise PermissionDenied


ViewFunc = Callable[..., HttpResponseBase]


def role_required(allowed: frozenset[Role]) -> Callable[[ViewFunc], ViewFunc]:
    """View decorator: anonymous -> login redirect; authenticated without a role -> 403."""

    def decorator(view: ViewFunc) -> ViewFunc:
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not has_any_role(request.user, allowed):
                raise PermissionDenied
            return view(request, *args, **kwargs)

        wrapped.allowed_roles = allowed  # type: ignore[attr-defined]
        return wrapped

    return decorator


class RoleRequiredMixin(AccessMixin):
    """Class-based equivalent of role_required; set `allowed_roles` on the view."""

    allowed_roles: frozenset[Role] = CAN_MODERATE
    raise_exception = False

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if not request.user.is_authenticated:
            return self.handle_no_permission()
        if not has_any_role(request.user, self.allowed_roles):
            raise PermissionDenied
        return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]
