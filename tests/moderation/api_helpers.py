"""Helpers shared by the API tests; the fixtures are in tests.moderation.api_fixtures (load it
with `pytest_plugins = ["tests.moderation.api_fixtures"]`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone
from rest_framework.test import APIClient

from moderation.models import Source


class ApiCaller:
    """An APIClient bound to one source's key."""

    def __init__(self, source: Source, raw_key: str):
        self.source = source
        self.raw_key = raw_key
        self.client = APIClient()
        self.client.credentials(HTTP_AUTHORIZATION=f"Api-Key {raw_key}")

    def post(self, path: str, data: Any = None, **kwargs: Any) -> Any:
        kwargs.setdefault("format", "json")
        return self.client.post(path, data, **kwargs)

    def put(self, path: str, data: Any = None, **kwargs: Any) -> Any:
        kwargs.setdefault("format", "json")
        return self.client.put(path, data, **kwargs)

    def get(self, path: str, data: Any = None, **kwargs: Any) -> Any:
        return self.client.get(path, data, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Any:
        return self.client.delete(path, **kwargs)

    def raw(self, path: str, body: bytes, content_type: str = "application/json", method: str = "post") -> Any:
        return getattr(self.client, method)(path, data=body, content_type=content_type)


def iso(delta: timedelta = timedelta(0)) -> str:
    return (timezone.now() + delta).isoformat()


# created_at is content (moderation.services.content_hash): one instant for the whole run, so
# that two post_payload() calls with the same external_id are the same post, as a retry is.
CREATED_AT = timezone.now()


def post_payload(external_id: str = "p-1", **overrides: Any) -> dict[str, Any]:
    now = timezone.now()
    payload: dict[str, Any] = {
        "external_id": external_id,
        "text": "Win a free phone, click now!",
        "url": "https://Promo.Example.co.uk:443/win?ref=42#frag",
        "preview": {"title": "You won", "description": "Claim", "text": "Enter your card number"},
        "author": {
            "external_id": "u-1",
            "username": "lucky",
            "account_created_at": (now - timedelta(days=2)).isoformat(),
            "email_domain": "Mailinator.com",
            "friends_count": 3,
            "followers_count": 0,
            "verified": False,
            "post_count": 40,
            "spam_post_count": 2,
            "spam_report_count": 5,
        },
        "ip": "203.0.113.9",
        "journey": [
            {"step": "open_composer", "at": (now - timedelta(seconds=3)).isoformat()},
            {"step": "paste", "at": (now - timedelta(seconds=2)).isoformat()},
            {"step": "submit", "at": (now - timedelta(seconds=1)).isoformat()},
        ],
        "share_count": 1,
        "comment_count": 2,
        "created_at": CREATED_AT.isoformat(),
    }
    payload.update(overrides)
    return payload
