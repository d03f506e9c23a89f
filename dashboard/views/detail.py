from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from core.errors import ApplicationError, NotFound
from dashboard.selectors.assignment import assign_target_choices, assignable_moderators, specialist_queues
from dashboard.selectors.detail import post_detail
from dashboard.selectors.notes import notes_for_post
from dashboard.selectors.queue import queue_next_post
from dashboard.selectors.sanctions import post_hidden
from dashboard.selectors.thresholds import live_thresholds
from dashboard.views.common import json_error, redirect_next, wants_json, with_query
from moderation.models import Decision, Label, Post, ReasonCode
from moderation.permissions import CAN_MODERATE, can_administer, role_required
from moderation.services.assignment import claim_blocker
from moderation.services.bulk import bulk_can_undo
from moderation.services.claims import claim_post, claim_release, claim_until_label, post_claim_state
from moderation.services.decisions import (
    DECIDED_STATUSES,
    decision_can_undo,
    decision_record,
    decision_undo,
    decision_undo_blocker,
    key_reason,
    post_version,
    undo_window,
)
from scoring.api import abuse_thresholds

FOCUS_KEYS = (
    "status",
    "score_min",
    "score_max",
    "has_reports",
    "domain",
    "author",
    "ip",
    "source",
    "model_version",
    "sort",
    "view",
    "assigned",
)


class DecisionForm(forms.Form):
    label = forms.ChoiceField(choices=Label.choices, widget=forms.RadioSelect)
    reason_code = forms.ChoiceField(choices=())
    note = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))
    # The post_version the page was rendered with; a stale one is refused (optimistic concurrency).
    version = forms.CharField(required=False, max_length=64)
    override = forms.BooleanField(required=False)

    def __init__(self, *args: object, reason_codes: list[ReasonCode], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        reason_field = self.fields["reason_code"]
        assert isinstance(reason_field, forms.ChoiceField)
        reason_field.choices = [("", "Choose a reason…")] + [(r.code, f"{r.label}") for r in reason_codes]


def _focus_params(request: HttpRequest) -> dict[str, str]:
    return {k: v for k in FOCUS_KEYS if (v := request.GET.get(k) or request.POST.get(k))}


@role_required(CAN_MODERATE)
def detail(request: HttpRequest, post_id: int) -> HttpResponse:
    try:
        data = post_detail(post_id=post_id)
    except NotFound as exc:
        raise Http404(str(exc)) from exc
    decided = data.post.status in DECIDED_STATUSES
    focus = request.GET.get("focus") == "1"
    # Reading claims nothing: only focus mode (which serves one post at a time) and the Claim
    # button do, so a colleague's queue never loses a post someone merely looked at.
    if focus and not decided:
        claim_post(post=data.post, user=request.user)
    claim = post_claim_state(post=data.post, user=request.user)
    live = [d for d in data.decisions if d.undone_at is None]
    latest = live[0] if live else None
    form = DecisionForm(reason_codes=data.reason_codes)
    s = data.score
    sub_scores = (
        [
            ("Text", s.text_score),
            ("Linked page", s.preview_score),
            ("Link", s.link_score),
            ("Behaviour", s.behaviour_score),
            ("Final", s.final_score),
        ]
        if s
        else []
    )
    return render(
        request,
        "dashboard/detail.html",
        {
            "d": data,
            "nav": "focus" if focus else "queue",
            "sub_scores": sub_scores,
            "post": data.post,
            "claim": claim,
            "form": form,
            "focus": focus,
            "focus_params": _focus_params(request),
            "reason_codes": data.reason_codes,
            "undo_seconds": int(undo_window().total_seconds()),
            "version": post_version(data.post),
            "hidden": post_hidden(post=data.post),
            "decided": decided and latest is not None,
            "latest_decision": latest,
            "can_undo": latest is not None and decision_can_undo(decision=latest, user=request.user),
            "undo_blocker": decision_undo_blocker(decision=latest) if latest is not None else "",
            # A post decided by a bulk action: its Undo is the whole action's.
            "bulk_undo": latest.bulk_action
            if latest is not None
            and latest.bulk_action is not None
            and bulk_can_undo(bulk=latest.bulk_action, user=request.user)
            else None,
            "key_reasons": {
                label: key_reason(label=label, reason_codes=data.reason_codes) for label in ("spam", "ham")
            },
            "reason_labels": {r.code: r.label for r in data.reason_codes},
            "thresholds": live_thresholds(),
            "abuse_thresholds": abuse_thresholds(data.post.source) if s and s.abuse_score is not None else None,
            "notes": notes_for_post(post=data.post),
            "is_admin": can_administer(request.user),
            "claim_blocker": claim_blocker(post=data.post, user=request.user),
            "assign_choices": assign_target_choices(moderators=assignable_moderators(), queues=specialist_queues())
            if not decided
            else [],
        },
    )


@require_POST
@role_required(CAN_MODERATE)
def decide(request: HttpRequest, post_id: int) -> HttpResponse:
    post = get_object_or_404(Post, pk=post_id)
    reason_codes = list(ReasonCode.objects.filter(is_active=True))
    form = DecisionForm(request.POST, reason_codes=reason_codes)
    quick = request.POST.get("quick") == "1"
    if quick:
        # Keyboard decisions from the queue (s/h) may carry no reason: the key's reason is used.
        form.fields["reason_code"].required = False
    if not form.is_valid():
        if wants_json(request):
            return json_error("Invalid decision.", code="invalid", status=400, fields=form.errors)
        messages.error(request, "Choose a label and a reason code.")
        return HttpResponseRedirect(reverse("dashboard:post_detail", args=[post.pk]))
    try:
        decision = decision_record(
            post=post,
            moderator=request.user,
            label=form.cleaned_data["label"],
            reason_code=form.cleaned_data["reason_code"],
            note=form.cleaned_data["note"],
            expected_version=form.cleaned_data["version"] or None,
            override=form.cleaned_data["override"],
        )
    except ApplicationError as exc:
        if wants_json(request):
            return json_error(exc.message, code=exc.code, status=exc.status_code, fields=exc.fields)
        messages.error(request, exc.message)
        return HttpResponseRedirect(reverse("dashboard:post_detail", args=[post.pk]))
    if wants_json(request):
        return JsonResponse({"post_id": post.pk, "decision_id": decision.pk, "status": decision.post.status})
    post_page = reverse("dashboard:post_detail", args=[post.pk])
    messages.success(
        request,
        format_html(
            'Post #{} marked {}. <form method="post" action="{}" class="inline-form">'
            '<input type="hidden" name="csrfmiddlewaretoken" value="{}"><input type="hidden" name="next" value="{}">'
            '<button type="submit" class="btn btn-small" data-undo>Undo</button></form>',
            post.pk,
            decision.get_label_display().lower(),
            reverse("dashboard:decision_undo", args=[decision.pk]),
            get_token(request),
            post_page,
        ),
        extra_tags="undo",
    )
    if request.POST.get("focus") == "1":
        return HttpResponseRedirect(with_query(reverse("dashboard:focus"), _focus_params(request)))
    if request.POST.get("next"):
        return redirect_next(request, post_page)
    # Decided: on to the next post, as focus mode does, without claiming it.
    following = queue_next_post(after_post_id=post.pk, user=request.user)
    return HttpResponseRedirect(
        reverse("dashboard:post_detail", args=[following.pk]) if following else reverse("dashboard:queue")
    )


@require_POST
@role_required(CAN_MODERATE)
def undo_decision(request: HttpRequest, decision_id: int) -> HttpResponse:
    decision = get_object_or_404(Decision, pk=decision_id)
    try:
        decision_undo(decision=decision, moderator=request.user)
    except ApplicationError as exc:
        if wants_json(request):
            return json_error(exc.message, code=exc.code, status=exc.status_code, fields=exc.fields)
        messages.error(request, exc.message)
    else:
        if wants_json(request):
            return JsonResponse({"decision_id": decision.pk, "post_id": decision.post_id, "undone": True})
        messages.success(request, f"Decision on post #{decision.post_id} undone.")
    return redirect_next(request, reverse("dashboard:post_detail", args=[decision.post_id]))


@require_POST
@role_required(CAN_MODERATE)
def claim(request: HttpRequest, post_id: int) -> HttpResponse:
    """The explicit claim: "I am working on this one" for a post opened from the queue."""
    post = get_object_or_404(Post.objects.select_related("claimed_by"), pk=post_id)
    if claim_post(post=post, user=request.user):
        messages.success(request, f"Post #{post.pk} is yours until {claim_until_label(post)}.")
    else:
        messages.error(request, f"Post #{post.pk} is claimed by {post.claimed_by} until {claim_until_label(post)}.")
    return redirect_next(request, reverse("dashboard:post_detail", args=[post.pk]))


@require_POST
@role_required(CAN_MODERATE)
def release(request: HttpRequest, post_id: int) -> HttpResponse:
    post = get_object_or_404(Post, pk=post_id)
    claim_release(post=post, user=request.user)
    if request.POST.get("focus") == "1":
        skipped = [int(i) for i in request.session.get("focus_skip", [])][-200:]
        request.session["focus_skip"] = [*skipped, post.pk]
        # Skip: release this one and take the next. The skipped item stays in the queue.
        return HttpResponseRedirect(with_query(reverse("dashboard:focus"), _focus_params(request)))
    return redirect_next(request, reverse("dashboard:queue"))
