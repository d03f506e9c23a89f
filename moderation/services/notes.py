"""Notes on an author or on one of their posts: what a moderator wants the next one to know
("second account of u-12", "ask the hate-speech team"), kept beside the record and never a
decision. A note is written, edited and deleted here only, each step audited; only its writer
or an admin edits or deletes it. Erasing the author deletes their notes
(moderation.services.erasure); retention deletes a post's notes with the post (the foreign key
cascades)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.errors import ApplicationError, Forbidden
from moderation.models import AuditLog, Author, Note, Post
from moderation.permissions import can_administer
from moderation.services.audit import audit_record

NOTE_MAX_LENGTH = 4000


def _clean_text(text: str) -> str:
    text = (text or "").strip()
    if not text:
        raise ApplicationError("A note needs some text.", code="invalid", fields={"text": ["This field is required."]})
    if len(text) > NOTE_MAX_LENGTH:
        raise ApplicationError(
            f"A note holds at most {NOTE_MAX_LENGTH} characters.",
            code="invalid",
            fields={"text": [f"Ensure this field has no more than {NOTE_MAX_LENGTH} characters."]},
        )
    return text


def _audit_target(note: Note) -> dict[str, Any]:
    return {"author_id": note.author_id, "post_id": note.post_id}


@transaction.atomic
def note_create(
    *, text: str, writer: Any, author: Author | None = None, post: Post | None = None, via: str = "dashboard"
) -> Note:
    """A note on `post` (and so on its author) or on `author`. `writer` is the moderator, None
    for the platform through the API (`via` "api:<slug>")."""
    if (author is None) == (post is None):
        raise ValueError("a note is on a post or on an author, one of the two")
    text = _clean_text(text)
    subject = post.author if post is not None else author
    assert subject is not None
    if subject.erased_at is not None:
        raise ApplicationError("This author's data was erased; no notes can be added.", code="author_erased")
    note = Note.objects.create(
        source_id=subject.source_id,
        author=subject,
        post=post,
        text=text,
        written_by=writer if writer is not None and getattr(writer, "is_authenticated", False) else None,
        via=via[:80],
    )
    audit_record(
        actor=writer, action="note.create", target=note, after={**_audit_target(note), "text": text, "via": via}
    )
    return note


def note_can_change(*, note: Note, user: Any) -> bool:
    """Its writer or an admin; a note the platform wrote through the API, only an admin."""
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    return (note.written_by_id is not None and note.written_by_id == user.pk) or can_administer(user)


@transaction.atomic
def note_update(*, note: Note, text: str, actor: Any) -> Note:
    if not note_can_change(note=note, user=actor):
        raise Forbidden("Only the note's writer or an admin can edit it.", code="not_note_writer")
    text = _clean_text(text)
    if text == note.text:
        return note
    before = note.text
    note.text = text
    note.edited_at = timezone.now()
    note.save(update_fields=["text", "edited_at"])
    audit_record(
        actor=actor,
        action="note.edit",
        target=note,
        before={**_audit_target(note), "text": before},
        after={**_audit_target(note), "text": text},
    )
    return note


@transaction.atomic
def note_delete(*, note: Note, actor: Any) -> None:
    if not note_can_change(note=note, user=actor):
        raise Forbidden("Only the note's writer or an admin can delete it.", code="not_note_writer")
    audit_record(actor=actor, action="note.delete", target=note, before={**_audit_target(note), "text": note.text})
    note.delete()


def notes_erase_author(*, author: Author) -> int:
    """Delete every note about `author` (on them or their posts) and strip the note texts the
    audit trail kept; the audit entries stay, with who did what and when. Inside the erasure's
    transaction."""
    # Every note entry records the author id beside the text, so deleted notes are found too.
    about = Q(after__author_id=author.pk) | Q(before__author_id=author.pk)
    for entry in AuditLog.objects.filter(about, target_type="note"):
        entry.before = {k: v for k, v in entry.before.items() if k != "text"}
        entry.after = {k: v for k, v in entry.after.items() if k != "text"}
        entry.save(update_fields=["before", "after"])
    deleted, _ = Note.objects.filter(author=author).delete()
    return deleted
