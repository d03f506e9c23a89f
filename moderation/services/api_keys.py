"""API keys of a source: created with a random secret that is shown once, stored as SHA-256."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable

from django.utils import timezone

from core.errors import ApplicationError
from moderation.models import ALL_SCOPES, ApiKey, Source


def hash_key(raw_key: str) -> str:
    """What is stored of an API key (and looked up on every request): its SHA-256."""
    return hashlib.sha256(raw_key.encode()).hexdigest()


# "mk_" marks a moderation key in logs and secret scanners; the 8 hex characters after it are
# stored in clear (ApiKey.prefix) so a leaked key can be traced to its row without the secret.
KEY_MARKER = "mk_"


def api_key_scopes_clean(scopes: Iterable[str]) -> list[str]:
    """The scopes in their canonical order; raises ApplicationError for an unknown one."""
    wanted = set(scopes)
    unknown = wanted - set(ALL_SCOPES)
    if unknown:
        raise ApplicationError(f"Unknown scopes: {', '.join(sorted(unknown))}.", code="invalid_scope")
    return [scope for scope in ALL_SCOPES if scope in wanted]


def api_key_create(*, source: Source, name: str, scopes: Iterable[str]) -> tuple[ApiKey, str]:
    """A new key for ``source`` that may do exactly ``scopes`` (moderation.models.ApiScope).
    Returns the row and the raw key; the raw key is not stored."""
    prefix = f"{KEY_MARKER}{secrets.token_hex(4)}"
    raw_key = f"{prefix}.{secrets.token_urlsafe(32)}"
    api_key = ApiKey.objects.create(
        source=source, name=name, prefix=prefix, hashed_key=hash_key(raw_key), scopes=api_key_scopes_clean(scopes)
    )
    return api_key, raw_key


def api_key_scopes_set(*, api_key: ApiKey, scopes: Iterable[str]) -> ApiKey:
    """Change what a key may do; takes effect on its next request (the cached key is dropped
    by moderation.receivers on save)."""
    api_key.scopes = api_key_scopes_clean(scopes)
    api_key.save(update_fields=["scopes"])
    return api_key


def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    """Revoke a key; revoking twice keeps the first revocation time."""
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
    return api_key
