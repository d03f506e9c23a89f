from __future__ import annotations

import logging
from typing import Any

from redis.exceptions import RedisError
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from moderation.api.authentication import SourcePrincipal

logger = logging.getLogger(__name__)


class ApiKeyRateThrottle(SimpleRateThrottle):
    """Per-API-key rate limit, counted in the Redis cache. Fails open: with the cache Redis down
    the request is let through (logged), so a cache outage never blocks ingest."""

    scope = "api_key"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if isinstance(request.user, SourcePrincipal):
            return self.cache_format % {"scope": self.scope, "ident": request.user.api_key.pk}
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def allow_request(self, request: Request, view: Any) -> bool:
        try:
            return super().allow_request(request, view)
        except RedisError as exc:
            logger.warning("api.throttle_unavailable error=%s: %s (request let through)", type(exc).__name__, exc)
            return True
