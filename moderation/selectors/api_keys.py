"""The active API key behind a key hash, read through the Django cache.

Authentication runs on every API request; without the cache it is one PostgreSQL query each
time. An entry lives API_KEY_CACHE_TTL_S seconds and is deleted whenever the key or its source
is saved or deleted (moderation.receivers), so a revocation or a disabled source takes effect
on the next request. Writes that bypass save() (QuerySet.update) are only seen after the TTL:
revoke through moderation.services.api_keys.api_key_revoke."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.core.cache import cache

from moderation.models import ApiKey

logger = logging.getLogger(__name__)

# Short: it also bounds how long a revocation could be missed when the cache delete itself
# failed (Redis down at the time) or raced a concurrent read that re-filled the entry.
API_KEY_CACHE_TTL_S = 30


def _cache_key(hashed_key: str) -> str:
    return f"apikey:{hashed_key}"


def api_key_active(*, hashed_key: str) -> ApiKey | None:
    """The unrevoked key with this hash, its source loaded; None for unknown or revoked keys.

    A cache outage falls back to PostgreSQL: authentication must not depend on Redis."""
    try:
        cached = cache.get(_cache_key(hashed_key))
    except Exception as exc:  # RedisError, or any other cache backend's failure
        logger.warning("api.key_cache_unavailable error=%s: %s", type(exc).__name__, exc)
        cached = None
    if isinstance(cached, ApiKey):
        return cached
    key = ApiKey.objects.select_related("source").filter(hashed_key=hashed_key, revoked_at__isnull=True).first()
    if key is not None:
        api_key_cache_store(api_key=key)
    return key


def api_key_cache_store(*, api_key: ApiKey) -> None:
    """(Re)cache a key as it is now, e.g. after touching its last_used_at."""
    try:
        cache.set(_cache_key(api_key.hashed_key), api_key, timeout=API_KEY_CACHE_TTL_S)
    except Exception as exc:
        logger.warning("api.key_cache_unavailable error=%s: %s", type(exc).__name__, exc)


def api_key_cache_forget(*, hashed_keys: Iterable[str]) -> None:
    """Drop cached keys. A cache outage is logged, not raised: the write that called this is
    already done, and readers fall back to PostgreSQL while the cache is down."""
    keys = [_cache_key(h) for h in hashed_keys]
    if not keys:
        return
    try:
        cache.delete_many(keys)
    except Exception as exc:
        logger.error("api.key_cache_forget_failed error=%s: %s keys=%d", type(exc).__name__, exc, len(keys))
