"""Who and where a post can be assigned to, as the dashboard offers it: the moderators and the
specialist queues, as choices of one select ("me", "user-<id>", "queue-<id>", "none")."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q

from core.errors import ApplicationError
from moderation.models import SpecialistQueue
from moderation.permissions import Role
from moderation.services.assignment import AssignTarget


def assignable_moderators() -> list[Any]:
    """Active users with the moderator or admin role (superusers count as admins)."""
    User = get_user_model()
    roles = Q(groups__name__in=[Role.MODERATOR.value, Role.ADMIN.value]) | Q(is_superuser=True)
    return list(User.objects.filter(roles, is_active=True).distinct().order_by("username"))


def specialist_queues() -> list[SpecialistQueue]:
    return list(SpecialistQueue.objects.order_by("name"))


def assign_target_choices(*, moderators: list[Any], queues: list[SpecialistQueue]) -> list[tuple[str, str]]:
    return [
        ("me", "Me"),
        *((f"user-{u.pk}", u.get_username()) for u in moderators),
        *((f"queue-{q.pk}", f"{q.name} queue") for q in queues),
        ("none", "Nobody (unassign)"),
    ]


def assign_target_resolve(*, value: str, user: Any) -> AssignTarget:
    """The AssignTarget a choice names; ApplicationError for one that names nothing."""
    if value == "me":
        return AssignTarget(user=user)
    if value == "none":
        return AssignTarget()
    kind, _, pk = value.partition("-")
    if pk.isdigit():
        if kind == "user":
            found = get_user_model().objects.filter(pk=int(pk), is_active=True).first()
            if found is not None:
                return AssignTarget(user=found)
        if kind == "queue":
            queue = SpecialistQueue.objects.filter(pk=int(pk)).first()
            if queue is not None:
                return AssignTarget(queue=queue)
    raise ApplicationError("Pick a moderator or a queue to assign to.", code="invalid", fields={"to": ["Unknown."]})
