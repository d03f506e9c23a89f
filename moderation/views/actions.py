"""Bulk decisions, cluster actions with preview/confirmation, undo, and enforcement."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.db.models import Model
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_http_methods, require_POST

from moderation.errors import ApplicationError
from moderation.models import Author, BulkAction, Domain, IpAddress, Label, ReasonCode
from moderation.permissions import CAN_MODERATE, role_required
from moderation.selectors.thresholds import live_thresholds
from moderation.services import enforcement
from moderation.services.bulk import (
    CLUSTER_KINDS,
    Cluster,
    bulk_can_undo,
    bulk_decide,
    bulk_undo,
    cluster_preview_count,
    cluster_queryset,
)
from moderation.views.common import redirect_next

CLUSTER_MODELS = {"author": Author, "domain": Domain, "ip": IpAddress}


def _undo_message(request: HttpRequest, bulk: BulkAction) -> None:
    messages.success(
        request,
        format_html(
            'Bulk action #{}: {} posts marked {}. <form method="post" action="{}" class="inline-form">'
            '<input type="hidden" name="csrfmiddlewaretoken" value="{}">'
            '<button type="submit" class="btn btn-small" data-undo>Undo</button></form>',
            bulk.pk,
            len(bulk.previous_statuses),
            bulk.get_label_display().lower(),
            reverse("moderation:bulk_undo", args=[bulk.pk]),
            get_token(request),
        ),
        extra_tags="undo",
    )


@require_POST
@role_required(CAN_MODERATE)
def bulk(request: HttpRequest) -> HttpResponse:
    try:
        ids = [int(i) for i in request.POST.getlist("post_ids")]
    except ValueError:
        return HttpResponseBadRequest("Bad post ids.")
    try:
        action = bulk_decide(
            moderator=request.user,
            label=request.POST.get("label", ""),
            reason_code=request.POST.get("reason_code", ""),
            note=request.POST.get("note", ""),
            post_ids=ids,
        )
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        _undo_message(request, action)
    return redirect_next(request, reverse("moderation:queue"))


@require_http_methods(["GET", "POST"])
@role_required(CAN_MODERATE)
def cluster(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    """GET: preview (how many pending posts, a sample) and the confirmation form. POST: act."""
    if kind not in CLUSTER_KINDS:
        return HttpResponseBadRequest("Unknown cluster.")
    target = get_object_or_404(CLUSTER_MODELS[kind], pk=pk)
    selection = Cluster(kind=kind, value=pk)
    if request.method == "POST":
        if request.POST.get("confirm") != "1":
            return HttpResponseBadRequest("Confirmation missing.")
        try:
            action = bulk_decide(
                moderator=request.user,
                label=request.POST.get("label", ""),
                reason_code=request.POST.get("reason_code", ""),
                note=request.POST.get("note", ""),
                cluster=selection,
            )
        except ApplicationError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(reverse("moderation:cluster", args=[kind, pk]))
        _undo_message(request, action)
        return redirect_next(request, reverse("moderation:queue"))
    sample = list(
        cluster_queryset(cluster=selection).select_related("author", "link__domain").order_by("-received_at")[:10]
    )
    return render(
        request,
        "moderation/cluster.html",
        {
            "kind": kind,
            "target": target,
            "count": cluster_preview_count(cluster=selection),
            "sample": sample,
            "labels": Label.choices,
            "label": request.GET.get("label", Label.SPAM),
            "reason_codes": list(ReasonCode.objects.filter(is_active=True)),
            "next": request.GET.get("next", ""),
            "thresholds": live_thresholds(),
        },
    )


@require_POST
@role_required(CAN_MODERATE)
def undo(request: HttpRequest, pk: int) -> HttpResponse:
    action = get_object_or_404(BulkAction, pk=pk)
    if not bulk_can_undo(bulk=action, user=request.user):
        messages.error(request, "This bulk action can no longer be undone.")
        return redirect_next(request, reverse("moderation:queue"))
    try:
        bulk_undo(bulk=action, moderator=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Bulk action #{action.pk} undone.")
    return redirect_next(request, reverse("moderation:queue"))


ENFORCEMENT: dict[tuple[str, str], tuple[type[Model], str, Callable[..., None], str]] = {
    ("domain", "block"): (Domain, "target", enforcement.list_block, "Domain {} blocked."),
    ("domain", "unblock"): (Domain, "target", enforcement.list_unblock, "Domain {} unblocked."),
    ("ip", "block"): (IpAddress, "target", enforcement.list_block, "IP {} blocked."),
    ("ip", "unblock"): (IpAddress, "target", enforcement.list_unblock, "IP {} unblocked."),
    ("author", "suspend"): (Author, "author", enforcement.author_suspend, "Author {} suspended."),
    ("author", "unsuspend"): (Author, "author", enforcement.author_unsuspend, "Author {} unsuspended."),
}


@require_POST
@role_required(CAN_MODERATE)
def enforce(request: HttpRequest, kind: str, pk: int, action: str) -> HttpResponse:
    entry = ENFORCEMENT.get((kind, action))
    if entry is None:
        return HttpResponseBadRequest("Unknown action.")
    model, kwarg, service, text = entry
    target = get_object_or_404(model, pk=pk)
    try:
        service(**{kwarg: target, "actor": request.user, "reason": request.POST.get("reason", "")})
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, text.format(target))
    return redirect_next(request, reverse("moderation:queue"))
