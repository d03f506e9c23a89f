from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from api.authentication import SourcePrincipal


class HasSourceApiKey(BasePermission):
    message = "A valid API key is required."

    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.user, SourcePrincipal)


class HasScope(BasePermission):
    """The key holds the scope the view declares for this method (`required_scopes`, method ->
    ApiScope). Fails closed: a handler without a declared scope is refused to every key, so a
    new endpoint cannot be reached until it says what it needs (tests/test_security_matrix.py
    checks every API view declares one per method)."""

    message = "This API key does not have the scope this request needs."
    code = "insufficient_scope"

    def has_permission(self, request: Request, view: Any) -> bool:
        if not isinstance(request.user, SourcePrincipal):
            return False  # HasSourceApiKey answers for this one
        method = "GET" if request.method == "HEAD" else (request.method or "")
        if method == "OPTIONS" or not hasattr(view, method.lower()):
            return True  # OPTIONS describes the public schema; an unserved method answers 405
        scope = getattr(view, "required_scopes", {}).get(method)
        return scope is not None and request.user.api_key.has_scope(scope)
