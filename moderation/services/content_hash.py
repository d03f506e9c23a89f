"""What makes a resent post "the same post": the content hash behind ingest's idempotency.

A post is stored once per (source, external_id). A resend with the same content is a retry and
answers with the stored post (200, or "existing" in a batch); a resend with *different* content
is a client bug (an external_id reused for another post) and answers 409 with the stored post's
id and content hash, as Stripe answers a reused idempotency key with other parameters.

The content is what the post says and who said it, as validated:
``external_id``, ``author.external_id``, ``text``, ``url`` (as sent, after trimming), the
preview's ``title``, ``description`` and ``text`` (absent and null count as empty), and
``created_at`` (as an instant: the same moment in another offset is the same content).
Not content: the author's profile and counters, ``share_count``, ``comment_count``, ``ip`` and
``journey``. A platform may re-measure those on a retry, and ingest keeps the first post's.

The hash is SHA-256 over a canonical JSON array of those values, prefixed with a version tag
so the definition can change without comparing unlike hashes. Posts stored before hashes were
kept have an empty hash and never conflict."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from django.utils.dateparse import parse_datetime

VERSION = "v1"


def post_content_hash(*, payload: Mapping[str, Any]) -> str:
    """The hex content hash of a validated post payload (PostInputSerializer's output)."""
    preview = payload.get("preview") or {}
    created_at = payload["created_at"]
    content = [
        VERSION,
        payload["external_id"],
        payload["author"]["external_id"],
        payload.get("text", ""),
        payload.get("url") or "",
        preview.get("title", ""),
        preview.get("description", ""),
        preview.get("text", ""),
        _instant(created_at),
    ]
    canonical = json.dumps(content, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _instant(value: Any) -> str:
    # Validated payloads carry an aware datetime; a caller of the service may pass ISO text.
    parsed = parse_datetime(value) if isinstance(value, str) else value
    if isinstance(parsed, datetime) and parsed.tzinfo is not None:
        return parsed.astimezone(UTC).isoformat()
    return str(value)


def content_differs(*, stored_hash: str, payload: Mapping[str, Any]) -> bool:
    """True when a resend's content is not the stored post's (never for a post stored without
    a hash)."""
    return bool(stored_hash) and stored_hash != post_content_hash(payload=payload)
