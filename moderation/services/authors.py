"""Author profiles: upserts on (source, external_id) from what the platform sends."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, transaction

from moderation.models import Author, Source

# Model fields a platform may set. Everything else on Author is this service's own state
# (our counters, suspension) and never comes from the payload.
AUTHOR_PROFILE_FIELDS: frozenset[str] = frozenset(
    {
        "username",
        "account_created_at",
        "email_domain",
        "friends_count",
        "followers_count",
        "verified",
        "platform_post_count",
        "platform_spam_post_count",
        "platform_spam_report_count",
    }
)


def author_upsert(*, source: Source, external_id: str, profile: Mapping[str, Any]) -> tuple[Author, bool]:
    """Create the author or update the profile fields given in ``profile`` (model field names).

    Fields absent from ``profile`` keep their stored value. Returns (author, created). Safe under
    concurrency: a lost insert race falls back to updating the row that won."""
    unknown = set(profile) - AUTHOR_PROFILE_FIELDS
    if unknown:
        raise ValueError(f"not author profile fields: {sorted(unknown)}")
    values = dict(profile)
    author = Author.objects.filter(source=source, external_id=external_id).first()
    if author is None:
        try:
            with transaction.atomic():
                return Author.objects.create(source=source, external_id=external_id, **values), True
        except IntegrityError:
            author = Author.objects.get(source=source, external_id=external_id)
    changed = [field for field, value in values.items() if getattr(author, field) != value]
    if changed:
        for field in changed:
            setattr(author, field, values[field])
        author.save(update_fields=[*changed, "updated_at"])
    return author, False
