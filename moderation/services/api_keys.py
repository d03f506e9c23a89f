"""API keys of a source: created with a random secret that is shown once, stored as SHA-256."""

from __future__ import annotations

import secrets

from django.utils import timezone

from moderation.api.authentication import hash_key
from moderation.models import ApiKey, Source

# "mk_" marks a moderation key in logs and secret scanners; the 8 hex characters after it are
# stored in clear (ApiKey.prefix) so a leaked key can be traced to its row without the secret.
KEY_MARKER = "mk_"


def api_key_create(*, source: Source, name: str) -> tuple[ApiKey, str]:
    """A new key for ``source``. Returns the row and the raw key; the raw key is not stored."""
    prefix = f"{KEY_MARKER}{secrets.token_hex(4)}"
    raw_key = f"{prefix}.{secrets.token_urlsafe(32)}"
    api_key = ApiKey.objects.create(source=source, name=name, prefix=prefix, hashed_key=hash_key(raw_key))
    return api_key, raw_key


def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    """Revoke a key; revoking twice keeps the first revocation time."""
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
    return api_key
