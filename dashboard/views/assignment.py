"""Assignment of queue items: claim (assign to me), give back, assign to a moderator or a
specialist queue, one post or a selection (moderation.services.assignment)."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.errors import ApplicationError
from dashboard.selectors.assignment import assign_target_resolve
from dashboard.views.common import json_error, redirect_next, wants_json
from moderation.models import Post
from moderation.permissions import CAN_MODERATE, role_required
from moderation.services.assignment import post_claim, post_unclaim, posts_assign


def _done(request: HttpRequest, post: Post, message: str) -> HttpResponse:
    if wants_json(request):
        return JsonResponse(
            {
                "post_id": post.pk,
                "assigned_to": post.assigned_to.get_username() if post.assigned_to is not None else None,
                "assigned_queue": post.assigned_queue.name if post.assigned_queue is not None else None,
            }
        )
    messages.success(request, message)
    return redirect_next(request, reverse("dashboard:post_detail", args=[post.pk]))


def _failed(request: HttpRequest, post_id: int, exc: ApplicationError) -> HttpResponse:
    if wants_json(request):
        return json_error(exc.message, code=exc.code, status=exc.status_code, fields=exc.fields)
    messages.error(request, exc.message)
    return redirect_next(request, reverse("dashboard:post_detail", args=[post_id]))


def _claim_or_give_back(request: HttpRequest, post_id: int, service: Callable[..., Post], message: str) -> HttpResponse:
    """One body for claim and unclaim: the service and the message ("{pk}": the post) are the mode."""
    post = get_object_or_404(Post, pk=post_id)
    try:
        post = service(post=post, user=request.user)
    except ApplicationError as exc:
        return _failed(request, post_id, exc)
    return _done(request, post, message.format(pk=post.pk))


@require_POST
@role_required(CAN_MODERATE)
def claim(request: HttpRequest, post_id: int) -> HttpResponse:
    return _claim_or_give_back(request, post_id, post_claim, "Post #{pk} is assigned to you.")


@require_POST
@role_required(CAN_MODERATE)
def unclaim(request: HttpRequest, post_id: int) -> HttpResponse:
    return _claim_or_give_back(request, post_id, post_unclaim, "Post #{pk} given back.")


@require_POST
@role_required(CAN_MODERATE)
def assign(request: HttpRequest, post_id: int) -> HttpResponse:
    post = get_object_or_404(Post, pk=post_id)
    try:
        target = assign_target_resolve(value=request.POST.get("to", ""), user=request.user)
        posts_assign(post_ids=[post.pk], actor=request.user, target=target)
    except ApplicationError as exc:
        return _failed(request, post_id, exc)
    post.refresh_from_db()
    return _done(request, post, f"Post #{post.pk}: assignment saved.")


@require_POST
@role_required(CAN_MODERATE)
def bulk_assign(request: HttpRequest) -> HttpResponse:
    try:
        ids = [int(i) for i in request.POST.getlist("post_ids")]
    except ValueError:
        return HttpResponseBadRequest("Bad post ids.")
    try:
        target = assign_target_resolve(value=request.POST.get("to", ""), user=request.user)
        changed = posts_assign(post_ids=ids, actor=request.user, target=target)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Assignment saved for {changed} of {len(set(ids))} posts.")
    return redirect_next(request, reverse("dashboard:queue"))
