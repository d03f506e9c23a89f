"""Author profiles: upserts on (source, external_id) from what the platform sends."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, transaction

from core.counters import upsert_counting
from moderation.models import Author, Source
from moderation.signals import author_changed

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
        author_changed.send(sender=Author, author=author, fields=changed)
    return author, False


def authors_upsert_counting_posts(
    *, source: Source, profiles: Mapping[str, Mapping[str, Any]], new_posts: Mapping[str, int]
) -> dict[str, int]:
    """Upsert authors and add their new posts to ``post_count``, in one statement per distinct
    set of profile fields (usually one). ``profiles`` maps external_id -> profile fields (model
    names, as author_upsert takes them); ``new_posts`` external_id -> posts being ingested.
    Returns external_id -> author id.

    Same profile semantics as author_upsert: given fields overwrite, absent ones keep their
    stored value, ``updated_at`` moves only when a profile value changed. Run it inside the
    transaction that inserts the posts: the counter must roll back with them. Rows are written
    in external_id order, so two of these never deadlock on each other."""
    by_fields: dict[tuple[str, ...], list[str]] = {}
    for external_id in sorted(profiles):
        fields = tuple(sorted(profiles[external_id]))
        unknown = set(fields) - AUTHOR_PROFILE_FIELDS
        if unknown:
            raise ValueError(f"not author profile fields: {sorted(unknown)}")
        by_fields.setdefault(fields, []).append(external_id)
    ids: dict[str, int] = {}
    for fields, external_ids in by_fields.items():
        rows = [
            Author(source=source, external_id=e, post_count=new_posts.get(e, 0), **profiles[e]) for e in external_ids
        ]
        pks = upsert_counting(rows=rows, unique=("source", "external_id"), overwrite=fields, touch="updated_at")
        ids.update(zip(external_ids, pks, strict=True))
    return ids
