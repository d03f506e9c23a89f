"""Notes as the API reads them: one source's notes on one of its posts or authors."""

from __future__ import annotations

from django.db.models import QuerySet

from core.errors import NotFound
from moderation.models import Author, Note, Post, Source


def note_subject_for_source(
    *, source: Source, post_external_id: str = "", author_external_id: str = ""
) -> tuple[Post | None, Author | None]:
    """The source's post, or else its author, that a note is about; NotFound for an unknown id,
    another source's, or an erased author."""
    if post_external_id:
        post = Post.objects.select_related("author").filter(source=source, external_id=post_external_id).first()
        if post is None:
            raise NotFound("No post with this external_id.", code="post_not_found")
        return post, None
    author = Author.objects.filter(source=source, external_id=author_external_id, erased_at__isnull=True).first()
    if author is None:
        raise NotFound("No author with this external_id.", code="author_not_found")
    return None, author


def notes_for_source(*, source: Source, post: Post | None = None, author: Author | None = None) -> QuerySet[Note]:
    """The notes on `post`, or every note about `author` (on them and on their posts); always
    within `source`."""
    rows = Note.objects.filter(source=source).select_related("post", "author")
    if post is not None:
        return rows.filter(post=post)
    return rows.filter(author=author)
