"""Ownership and notes in a real headless Chromium: a moderator claims the top post of the
queue with the keyboard, opens it, adds a note, and the note is on the evidence page."""

from __future__ import annotations

import pytest

from moderation.models import AuditLog, Note, Post
from tests.dashboard.dashboard_factories import UserFactory
from tests.e2e.seed import seed_world
from tests.e2e.test_e2e_dashboard import current_id, login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_claim_from_the_queue_then_a_note_on_the_evidence_page(page, live_server):
    page.set_default_timeout(30_000)  # a busy machine: the first page may be slow to load
    seed_world()
    mia = UserFactory(username="mia", role="moderator")
    login(page, live_server, "mia")

    # "c" on the current row assigns it to me; the row says so without a reload.
    top = current_id(page)
    page.keyboard.press("c")
    row = page.locator(f'tr.qrow[data-post-id="{top}"]')
    row.locator(".badge-assigned", has_text="assigned to you").wait_for()
    assert Post.objects.get(pk=top).assigned_to_id == mia.pk

    # The "Mine" view lists it.
    page.locator("#f-assigned").select_option("mine")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url("**assigned=mine**")
    assert page.locator("tr.qrow").evaluate_all("rs => rs.map(r => Number(r.dataset.postId))") == [top]

    # Open it: the assignment panel names me; add a note with markup in it.
    page.keyboard.press("o")
    page.wait_for_url(f"**/dashboard/posts/{top}/**")
    assert "Assigned to you" in page.locator("[data-assignee]").inner_text()
    page.locator("#note-text").fill("Same wording as last week's <b>scam</b> wave")
    page.get_by_role("button", name="Add note").click()
    page.wait_for_url(f"**/dashboard/posts/{top}/**")

    note = page.locator("[data-notes] [data-note]").first
    assert note.locator(".note-text").inner_text() == "Same wording as last week's <b>scam</b> wave"
    assert note.locator("b").count() == 0  # shown as text, never as markup
    assert "mia" in note.inner_text()
    saved = Note.objects.get()
    assert (saved.post_id, saved.written_by_id) == (top, mia.pk)
    assert AuditLog.objects.filter(action="post.claim", target_id=str(top)).exists()
    assert AuditLog.objects.filter(action="note.create", target_id=str(saved.pk)).exists()
