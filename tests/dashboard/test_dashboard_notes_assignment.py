"""The dashboard's notes (evidence and author pages) and assignment (claim, assign, the queue's
ownership views, bulk assignment)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from moderation.models import AuditLog, Note, Post, SpecialistQueue
from moderation.services.assignment import AssignTarget, post_claim, posts_assign
from moderation.services.notes import note_create
from tests.dashboard.dashboard_factories import PostFactory, UserFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403
from tests.dashboard.dashboard_fixtures import client_for

pytestmark = pytest.mark.django_db


def _row_ids(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'<tr class="qrow[^"]*" data-post-id="(\d+)"', html)]


def test_notes_show_newest_first_escaped_on_the_evidence_and_author_pages(mod_client, moderator):
    post = PostFactory()
    sibling = PostFactory(author=post.author)
    note_create(text="older <b>on the author</b>", writer=moderator, author=post.author)
    note_create(text="<script>alert(1)</script> on this post", writer=moderator, post=post)
    note_create(text="on another post of theirs", writer=moderator, post=sibling)

    html = mod_client.get(reverse("dashboard:post_detail", args=[post.pk])).content.decode()
    notes = html[html.index("data-notes") :]
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in notes
    assert notes.index("on this post") < notes.index("older &lt;b&gt;on the author")
    assert "about the author" in notes and "on another post of theirs" not in notes

    page = mod_client.get(reverse("dashboard:author", args=[post.author_id])).content.decode()
    shown = page[page.index("data-notes") :]
    order = [shown.index(t) for t in ("on another post of theirs", "on this post", "older &lt;b&gt;on the author")]
    assert order == sorted(order)
    assert f"post #{sibling.pk}" in shown


def test_adding_a_note_on_the_post_or_its_author(mod_client, moderator):
    post = PostFactory()
    url = reverse("dashboard:post_note_add", args=[post.pk])
    assert mod_client.post(url, {"text": "on the post"}).status_code == 302
    assert mod_client.post(url, {"text": "on the author", "about": "author"}).status_code == 302
    assert mod_client.post(url, {"text": "   "}).status_code == 302  # refused, with a message
    notes = {n.text: n for n in Note.objects.all()}
    assert set(notes) == {"on the post", "on the author"}
    assert notes["on the post"].post_id == post.pk and notes["on the author"].post_id is None
    assert notes["on the author"].author_id == post.author_id
    assert all(n.written_by_id == moderator.pk for n in notes.values())
    author_url = reverse("dashboard:author_note_add", args=[post.author_id])
    assert mod_client.post(author_url, {"text": "from the author page"}).status_code == 302
    assert Note.objects.filter(text="from the author page", post__isnull=True).exists()


def test_only_the_writer_or_an_admin_edits_and_deletes(mod_client, moderator, admin_user):
    post = PostFactory()
    note = note_create(text="mine", writer=moderator, post=post)
    colleague = client_for(UserFactory(role="moderator"))
    edit, delete = reverse("dashboard:note_edit", args=[note.pk]), reverse("dashboard:note_delete", args=[note.pk])
    assert colleague.get(edit).status_code == 403
    assert colleague.post(edit, {"text": "theirs"}).status_code == 403
    assert colleague.post(delete).status_code == 403
    page = colleague.get(reverse("dashboard:post_detail", args=[post.pk])).content.decode()
    assert "data-note-edit" not in page  # no buttons for what they may not do

    assert mod_client.get(edit).status_code == 200
    assert mod_client.post(edit, {"text": "mine, edited"}).status_code == 302
    note.refresh_from_db()
    assert note.text == "mine, edited" and note.edited_at is not None
    assert client_for(admin_user).post(delete).status_code == 302
    assert not Note.objects.exists()
    assert [e.action for e in AuditLog.objects.filter(target_type="note").order_by("pk")] == [
        "note.create",
        "note.edit",
        "note.delete",
    ]


def test_claim_from_the_queue_as_json_and_a_colleagues_claim_is_refused(mod_client, moderator):
    post = PostFactory()
    url = reverse("dashboard:assign_claim", args=[post.pk])
    response = mod_client.post(url, HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert response.json() == {"post_id": post.pk, "assigned_to": moderator.username, "assigned_queue": None}
    colleague = client_for(UserFactory(role="moderator"))
    refused = colleague.post(url, HTTP_ACCEPT="application/json")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "not_claimable"
    assert Post.objects.get(pk=post.pk).assigned_to == moderator
    html = mod_client.get(reverse("dashboard:queue")).content.decode()
    assert "assigned to you" in html


def test_assign_to_someone_and_to_a_queue_from_the_post_page(mod_client, moderator):
    bob = UserFactory(username="bob", role="moderator")
    queue = SpecialistQueue.objects.create(category="hate", name="Hate speech")
    post = PostFactory()
    page = mod_client.get(reverse("dashboard:post_detail", args=[post.pk])).content.decode()
    assert f'value="user-{bob.pk}"' in page and f'value="queue-{queue.pk}"' in page
    url = reverse("dashboard:assign", args=[post.pk])
    mod_client.post(url, {"to": f"user-{bob.pk}"})
    assert Post.objects.get(pk=post.pk).assigned_to == bob
    mod_client.post(url, {"to": f"queue-{queue.pk}"})
    post.refresh_from_db()
    assert (post.assigned_to, post.assigned_queue) == (None, queue)
    assert "Hate speech" in mod_client.get(reverse("dashboard:post_detail", args=[post.pk])).content.decode()
    mod_client.post(url, {"to": "user-999999"})  # no such user: nothing changes
    post.refresh_from_db()
    assert post.assigned_queue == queue


def test_the_queues_ownership_views_keep_the_priority_order(mod_client, moderator):
    bob = UserFactory(username="bob", role="moderator")
    queue = SpecialistQueue.objects.create(category="hate", name="Hate speech")
    mine = [PostFactory(priority=p) for p in (0.2, 0.9, 0.5)]
    theirs = PostFactory(priority=0.8)
    queued = [PostFactory(priority=p) for p in (0.3, 0.7)]
    free = [PostFactory(priority=p) for p in (0.1, 0.95)]
    posts_assign(post_ids=[p.pk for p in mine], actor=moderator, target=AssignTarget(user=moderator))
    posts_assign(post_ids=[theirs.pk], actor=moderator, target=AssignTarget(user=bob))
    posts_assign(post_ids=[p.pk for p in queued], actor=moderator, target=AssignTarget(queue=queue))

    def view(assigned: str) -> list[int]:
        response = mod_client.get(reverse("dashboard:queue"), {"assigned": assigned})
        assert response.status_code == 200
        return _row_ids(response.content.decode())

    by_priority = lambda posts: [p.pk for p in sorted(posts, key=lambda p: -p.priority)]  # noqa: E731
    assert view("mine") == by_priority(mine)
    assert view("unassigned") == by_priority(free)
    assert view(f"queue-{queue.pk}") == by_priority(queued)
    assert view("") == by_priority([*mine, theirs, *queued, *free])
    # Bob's view is his own.
    assert _row_ids(client_for(bob).get(reverse("dashboard:queue"), {"assigned": "mine"}).content.decode()) == [
        theirs.pk
    ]
    html = mod_client.get(reverse("dashboard:queue")).content.decode()
    assert 'data-assignee="bob"' in html and f'data-assigned-queue="{queue.pk}"' in html
    bad = mod_client.get(reverse("dashboard:queue"), {"assigned": "queue-999999"})
    assert bad.status_code == 400 and "assigned" in bad.content.decode()


def test_bulk_assign_and_unassign(mod_client, moderator):
    posts = [PostFactory() for _ in range(3)]
    ids = [str(p.pk) for p in posts[:2]]
    response = mod_client.post(reverse("dashboard:bulk_assign"), {"post_ids": ids, "to": "me"})
    assert response.status_code == 302
    assert set(Post.objects.filter(assigned_to=moderator).values_list("pk", flat=True)) == {
        posts[0].pk,
        posts[1].pk,
    }
    mod_client.post(reverse("dashboard:bulk_assign"), {"post_ids": ids, "to": "none"})
    assert not Post.objects.filter(assigned_to__isnull=False).exists()
    assert AuditLog.objects.filter(action="post.unassign").count() == 2


def test_the_claim_button_follows_the_claim_rules(mod_client, moderator):
    post = PostFactory()
    url = reverse("dashboard:post_detail", args=[post.pk])
    assert "data-assign-claim" in mod_client.get(url).content.decode()
    post_claim(post=post, user=UserFactory(username="carol", role="moderator"))
    page = mod_client.get(url).content.decode()
    assert "data-assign-claim" not in page and "Assigned to carol" in page.replace("<strong>", "").replace(
        "</strong>", ""
    )


def test_focus_mode_serves_neither_a_colleagues_post_nor_other_specialists_work(mod_client, moderator):
    bob = UserFactory(username="bob", role="moderator")
    queue = SpecialistQueue.objects.create(category="hate", name="Hate speech")
    bobs = PostFactory(priority=0.99)
    hateful = PostFactory(priority=0.98)
    plain = PostFactory(priority=0.5)
    posts_assign(post_ids=[bobs.pk], actor=bob, target=AssignTarget(user=bob))
    posts_assign(post_ids=[hateful.pk], actor=bob, target=AssignTarget(queue=queue))

    served = mod_client.get(reverse("dashboard:focus"))
    assert served.status_code == 302 and f"/posts/{plain.pk}/" in served["Location"]
    # A member of the queue is served its post first (it ranks above the plain one).
    queue.members.add(moderator)
    mod_client.post(reverse("dashboard:release", args=[plain.pk]))
    served = mod_client.get(reverse("dashboard:focus"))
    assert f"/posts/{hateful.pk}/" in served["Location"]
    # Bob is served his own post.
    assert f"/posts/{bobs.pk}/" in client_for(bob).get(reverse("dashboard:focus"))["Location"]
