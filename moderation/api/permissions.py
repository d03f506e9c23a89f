from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from moderation.api.authentication import SourcePrincipal


class HasSourceApiKey(BasePermission):
    message = "A valid API key is required."

    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.user, SourcePrincipal)
