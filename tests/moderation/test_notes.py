"""Notes on authors and posts: who may change them, the audit trail, the API per post and per
author, and that no source reads or writes another's notes."""

from __future__ import annotations

import pytest

from core.errors import ApplicationError, Forbidden
from moderation.models import AuditLog, Note, PostStatus
from moderation.services.notes import NOTE_MAX_LENGTH, note_create, note_delete, note_update
from moderation.services.retention import posts_expire
from tests.dashboard.dashboard_factories import UserFactory
from tests.scoring.pipeline_support import make_author, make_post, make_source

pytest_plugins = ["tests.moderation.api_fixtures"]
pytestmark = pytest.mark.django_db


def test_a_note_on_a_post_is_also_about_its_author_and_is_audited():
    mod = UserFactory(role="moderator")
    post = make_post(external_id="n-1", status=PostStatus.QUEUED)
    note = note_create(text="  seen this link before  ", writer=mod, post=post)
    assert (note.text, note.author_id, note.source_id, note.written_by_id) == (
        "seen this link before",
        post.author_id,
        post.source_id,
        mod.pk,
    )
    entry = AuditLog.objects.get(action="note.create", target_id=str(note.pk))
    assert entry.actor_id == mod.pk
    assert entry.after["post_id"] == post.pk and entry.after["text"] == "seen this link before"
    post.refresh_from_db()  # a note decides nothing
    assert post.status == PostStatus.QUEUED and not post.decisions.exists()


@pytest.mark.parametrize("text", ["", "   ", "x" * (NOTE_MAX_LENGTH + 1)])
def test_an_empty_or_oversized_note_is_refused(text):
    with pytest.raises(ApplicationError):
        note_create(text=text, writer=UserFactory(role="moderator"), author=make_author(make_source()))
    assert not Note.objects.exists()


def test_only_the_writer_or_an_admin_edits_or_deletes():
    writer, colleague, admin = (
        UserFactory(role="moderator"),
        UserFactory(role="moderator"),
        UserFactory(role="admin"),
    )
    note = note_create(text="first", writer=writer, author=make_author(make_source()))
    with pytest.raises(Forbidden):
        note_update(note=note, text="hijacked", actor=colleague)
    with pytest.raises(Forbidden):
        note_delete(note=note, actor=colleague)
    note.refresh_from_db()
    assert note.text == "first" and note.edited_at is None

    note_update(note=note, text="second", actor=writer)
    note.refresh_from_db()
    assert note.text == "second" and note.edited_at is not None
    edit = AuditLog.objects.get(action="note.edit", target_id=str(note.pk))
    assert (edit.before["text"], edit.after["text"]) == ("first", "second")

    note_update(note=note, text="third", actor=admin)
    note_delete(note=note, actor=admin)
    assert not Note.objects.filter(pk=note.pk).exists()
    assert AuditLog.objects.get(action="note.delete").before["text"] == "third"


def test_a_note_the_platform_sent_is_changed_by_an_admin_only():
    note = note_create(text="from support", writer=None, author=make_author(make_source()), via="api:shop")
    with pytest.raises(Forbidden):
        note_delete(note=note, actor=UserFactory(role="moderator"))
    note_delete(note=note, actor=UserFactory(role="admin"))
    assert not Note.objects.exists()


def test_retention_deletes_a_post_with_its_notes(settings):
    from datetime import timedelta

    from django.utils import timezone

    post = make_post(external_id="old", status=PostStatus.REMOVED)
    note_create(text="on the old post", writer=None, post=post, via="api:x")
    kept = note_create(text="on the author", writer=None, author=post.author, via="api:x")
    post.received_at = timezone.now() - timedelta(days=400)
    post.save(update_fields=["received_at"])
    assert posts_expire(source=post.source, now=timezone.now()) == 1
    assert list(Note.objects.values_list("pk", flat=True)) == [kept.pk]


# --- the API -------------------------------------------------------------------------------------


def test_notes_per_post_and_per_author_over_the_api(api):
    author = make_author(api.source, external_id="u-1")
    post = make_post(author=author, external_id="p-1")
    other_post = make_post(author=author, external_id="p-2")
    mod = UserFactory(role="moderator")
    on_post = note_create(text="moderator on p-1", writer=mod, post=post)
    note_create(text="moderator on p-2", writer=mod, post=other_post)

    created = api.post("/api/v1/notes", {"author_external_id": "u-1", "text": "support: second account"})
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["author_external_id"], body["post_external_id"], body["via"]) == (
        "u-1",
        None,
        f"api:{api.source.slug}",
    )
    assert Note.objects.get(pk=body["id"]).written_by is None

    by_post = api.get("/api/v1/notes", {"post_external_id": "p-1"})
    assert by_post.status_code == 200
    assert [n["id"] for n in by_post.json()["results"]] == [on_post.pk]
    by_author = api.get("/api/v1/notes", {"author_external_id": "u-1"}).json()["results"]
    # Every note about the author, newest first; the moderator's name is not published.
    assert [n["text"] for n in by_author] == ["support: second account", "moderator on p-2", "moderator on p-1"]
    assert mod.username not in api.get("/api/v1/notes", {"author_external_id": "u-1"}).content.decode()


@pytest.mark.parametrize(
    "body",
    [
        {"text": "no subject"},
        {"post_external_id": "p-1", "author_external_id": "u-1", "text": "both"},
        {"post_external_id": "p-1", "text": ""},
        {"post_external_id": "p-1", "text": "x", "decision": "spam"},
    ],
)
def test_a_note_body_names_one_subject_and_some_text(api, body):
    make_post(author=make_author(api.source, external_id="u-1"), external_id="p-1")
    response = api.post("/api/v1/notes", body)
    assert response.status_code == 400, response.content
    assert not Note.objects.exists()
    assert api.get("/api/v1/notes").status_code == 400


def test_no_source_reads_or_writes_another_sources_notes(api, other_api):
    author = make_author(api.source, external_id="shared-id")
    post = make_post(author=author, external_id="shared-post")
    note_create(text="tenant-a-secret-note", writer=UserFactory(role="moderator"), post=post)
    # The other source has an author and a post with the same external ids, and its own note.
    theirs = make_post(author=make_author(other_api.source, external_id="shared-id"), external_id="shared-post")
    note_create(text="their own note", writer=None, post=theirs, via="api:b")

    for params in ({"post_external_id": "shared-post"}, {"author_external_id": "shared-id"}):
        response = other_api.get("/api/v1/notes", params)
        assert response.status_code == 200
        assert "tenant-a-secret-note" not in response.content.decode()
        assert [n["text"] for n in response.json()["results"]] == ["their own note"]
    # A's post that B has no such id for: 404, and B's note lands nowhere.
    make_post(author=author, external_id="a-only")
    assert other_api.get("/api/v1/notes", {"post_external_id": "a-only"}).status_code == 404
    refused = other_api.post("/api/v1/notes", {"post_external_id": "a-only", "text": "b writes on a"})
    assert refused.status_code == 404
    assert not Note.objects.filter(text="b writes on a").exists()
    assert set(Note.objects.filter(source=api.source).values_list("text", flat=True)) == {"tenant-a-secret-note"}
