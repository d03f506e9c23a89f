"""Notes on a post or an author: add, edit, delete (moderation.services.notes)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from core.errors import ApplicationError
from dashboard.views.common import redirect_next, safe_next
from moderation.models import Author, Note, Post
from moderation.permissions import CAN_MODERATE, role_required
from moderation.services.notes import NOTE_MAX_LENGTH, note_can_change, note_create, note_delete, note_update


class NoteForm(forms.Form):
    text = forms.CharField(
        label="Note", max_length=NOTE_MAX_LENGTH, widget=forms.Textarea(attrs={"rows": 3}), strip=True
    )


def _note_page(note: Note) -> str:
    if note.post_id is not None:
        return reverse("dashboard:post_detail", args=[note.post_id]) + "#notes"
    return reverse("dashboard:author", args=[note.author_id]) + "#notes"


def _add(request: HttpRequest, *, post: Post | None, author: Author | None, page: str) -> HttpResponse:
    form = NoteForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"A note needs some text, at most {NOTE_MAX_LENGTH} characters.")
        return redirect_next(request, page)
    try:
        note_create(text=form.cleaned_data["text"], writer=request.user, post=post, author=author)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, "Note added.")
    return redirect_next(request, page)


@require_POST
@role_required(CAN_MODERATE)
def post_note_add(request: HttpRequest, post_id: int) -> HttpResponse:
    post = get_object_or_404(Post.objects.select_related("author"), pk=post_id)
    page = reverse("dashboard:post_detail", args=[post.pk]) + "#notes"
    if request.POST.get("about") == "author":  # from the post's page, a note on its author
        return _add(request, post=None, author=post.author, page=page)
    return _add(request, post=post, author=None, page=page)


@require_POST
@role_required(CAN_MODERATE)
def author_note_add(request: HttpRequest, author_id: int) -> HttpResponse:
    author = get_object_or_404(Author, pk=author_id)
    page = reverse("dashboard:author", args=[author.pk]) + "#notes"
    return _add(request, post=None, author=author, page=page)


@require_http_methods(["GET", "POST"])
@role_required(CAN_MODERATE)
def note_edit(request: HttpRequest, note_id: int) -> HttpResponse:
    note = get_object_or_404(Note.objects.select_related("written_by", "author", "post"), pk=note_id)
    if not note_can_change(note=note, user=request.user):
        raise PermissionDenied
    back = safe_next(request, _note_page(note))
    form = NoteForm(request.POST if request.method == "POST" else None, initial={"text": note.text})
    if request.method == "POST" and form.is_valid():
        try:
            note_update(note=note, text=form.cleaned_data["text"], actor=request.user)
        except ApplicationError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, "Note saved.")
            return HttpResponseRedirect(back)
    status = 400 if request.method == "POST" else 200
    return render(request, "dashboard/note_edit.html", {"note": note, "form": form, "back": back}, status=status)


@require_POST
@role_required(CAN_MODERATE)
def note_remove(request: HttpRequest, note_id: int) -> HttpResponse:
    note = get_object_or_404(Note, pk=note_id)
    page = _note_page(note)
    try:
        note_delete(note=note, actor=request.user)
    except ApplicationError as exc:
        if exc.status_code == 403:
            raise PermissionDenied from exc
        messages.error(request, exc.message)
    else:
        messages.success(request, "Note deleted.")
    return redirect_next(request, page)
