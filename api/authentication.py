"""API-key authentication: `Authorization: Api-Key <key>` (or `X-Api-Key: <key>`).

Keys are looked up by their SHA-256 hash; the plaintext is never stored."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from moderation.models import ApiKey
from moderation.selectors.api_keys import api_key_active, api_key_cache_store
from moderation.services.api_keys import hash_key


class SourcePrincipal:
    """The authenticated caller: a source, through one of its keys. Not a Django user."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, api_key: ApiKey):
        self.api_key = api_key
        self.source = api_key.source

    def __str__(self) -> str:
        return f"source:{self.source.slug}"


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Api-Key"

    def authenticate(self, request: Request) -> tuple[SourcePrincipal, ApiKey] | None:
        raw = request.headers.get("X-Api-Key", "")
        auth = request.headers.get("Authorization", "")
        if not raw and auth:
            scheme, _, value = auth.partition(" ")
            if scheme.lower() != self.keyword.lower():
                return None
            raw = value.strip()
        if not raw:
            return None
        key = api_key_active(hashed_key=hash_key(raw))
        if key is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        if not key.source.is_active:
            raise exceptions.AuthenticationFailed("This source is disabled.")
        now = timezone.now()
        # Touch last_used_at at most once a minute: one write per request would cost throughput.
        # QuerySet.update (no post_save): the cached copy is refreshed here instead of dropped.
        if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
            key.last_used_at = now
            api_key_cache_store(api_key=key)
        return SourcePrincipal(key), key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


def request_source(request: Any) -> Any:
    """The Source of an authenticated API request."""
    return request.user.source
