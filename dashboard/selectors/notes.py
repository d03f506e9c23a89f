"""The moderators' notes as the evidence and author pages show them, newest first."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from moderation.models import Author, Note, Post


def _rows() -> QuerySet[Note]:
    return Note.objects.select_related("written_by").order_by("-created_at", "-id")


def notes_for_post(*, post: Post) -> list[Note]:
    """Notes on this post, and notes on its author (context for every post of theirs)."""
    return list(_rows().filter(Q(post=post) | Q(author_id=post.author_id, post__isnull=True)))


def notes_for_author(*, author: Author) -> list[Note]:
    """Every note about the author: on them, and on each of their posts."""
    return list(_rows().filter(author=author))
