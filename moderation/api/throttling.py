from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from moderation.api.authentication import SourcePrincipal


class ApiKeyRateThrottle(SimpleRateThrottle):
    """Per-API-key rate limit, counted in the Redis cache."""

    scope = "api_key"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if isinstance(request.user, SourcePrincipal):
            return self.cache_format % {"scope": self.scope, "ident": request.user.api_key.pk}
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
