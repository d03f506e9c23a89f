"""The author page (the author's history and the actions at hand) and erasure on request."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from core.errors import ApplicationError, NotFound
from dashboard.selectors.authors import author_page
from dashboard.selectors.notes import notes_for_author
from dashboard.selectors.sanctions import author_sanctions
from dashboard.selectors.thresholds import live_thresholds
from moderation.enforcement_state import author_allowlisted, author_suspended
from moderation.models import Author, ReasonCode
from moderation.permissions import CAN_ADMINISTER, CAN_MODERATE, can_administer, role_required
from moderation.services.erasure import author_erase


@role_required(CAN_MODERATE)
def author(request: HttpRequest, author_id: int) -> HttpResponse:
    try:
        page = author_page(author_id=author_id)
    except NotFound as exc:
        raise Http404(str(exc)) from exc
    now = timezone.now()
    context = {
        "page": page,
        "a": page.author,
        "suspended": author_suspended(page.author, now=now),
        "trusted": author_allowlisted(page.author, now=now),
        "thresholds": live_thresholds(),
        "can_erase": can_administer(request.user) and page.author.erased_at is None,
        "reason_labels": dict(ReasonCode.objects.values_list("code", "label")),
        "sanctions": author_sanctions(author=page.author),
        "notes": notes_for_author(author=page.author),
        "is_admin": can_administer(request.user),
        "now": now,
    }
    return render(request, "dashboard/author.html", context)


class ErasureForm(forms.Form):
    confirm = forms.BooleanField(
        required=True, label="I confirm the author asked for their personal data to be erased. This cannot be undone."
    )


@require_http_methods(["GET", "POST"])
@role_required(CAN_ADMINISTER)
def author_erase_view(request: HttpRequest, author_id: int) -> HttpResponse:
    """GET: what erasure removes and the confirmation. POST: erase (admins only)."""
    target = get_object_or_404(Author.objects.select_related("source"), pk=author_id)
    form = ErasureForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            author_erase(author=target, actor=request.user, via="dashboard")
        except ApplicationError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, "The author's personal data was erased.")
            return HttpResponseRedirect(reverse("dashboard:author", args=[target.pk]))
    status = 400 if request.method == "POST" else 200
    return render(request, "dashboard/author_erase.html", {"a": target, "form": form}, status=status)
