"""Whether an enforcement entry applies now: a suspension, an allow-list entry or a global block
applies from when it was set until it is lifted or its expiry passes. Read on the rows already
loaded (the scoring load joins author, domain and IP), so checking costs no query; an expired
entry simply stops applying, no task has to clear it."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings

from moderation.models import Author, Domain, IpAddress, ListStatus, Source

SUSPENDED_POST_ACTIONS = frozenset({"queue", "remove"})


def _current(until: datetime | None, now: datetime) -> bool:
    return until is None or until > now


def author_suspended(author: Author, *, now: datetime) -> bool:
    return author.suspended_at is not None and _current(author.suspended_until, now)


def author_allowlisted(author: Author, *, now: datetime) -> bool:
    return author.allowlisted_at is not None and _current(author.allowlisted_until, now)


def list_status(row: Domain | IpAddress, *, now: datetime) -> str:
    """The row's global status as it applies at `now`: an expired block or allow is unknown."""
    if row.status != ListStatus.UNKNOWN and not _current(row.status_until, now):
        return ListStatus.UNKNOWN
    return row.status


def suspended_post_action(source: Source) -> str:
    """ "queue" or "remove": the source's own choice, else the SUSPENDED_AUTHOR_POSTS setting."""
    chosen = source.suspended_author_posts or settings.SUSPENDED_AUTHOR_POSTS
    return chosen if chosen in SUSPENDED_POST_ACTIONS else "queue"
