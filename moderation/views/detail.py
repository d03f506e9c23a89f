from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from moderation.errors import ApplicationError, NotFound
from moderation.models import Label, Post, ReasonCode
from moderation.permissions import CAN_MODERATE, role_required
from moderation.selectors.detail import post_detail
from moderation.services.bulk import undo_window
from moderation.services.claims import claim_post, claim_release
from moderation.services.decisions import decision_record
from moderation.views.common import json_error, redirect_next, wants_json, with_query

FOCUS_KEYS = ("status", "score_min", "score_max", "has_reports", "domain", "author", "ip", "source", "model_version")


class DecisionForm(forms.Form):
    label = forms.ChoiceField(choices=Label.choices, widget=forms.RadioSelect)
    reason_code = forms.ChoiceField(choices=())
    note = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))

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
    claimed = claim_post(post=data.post, user=request.user)
    focus = request.GET.get("focus") == "1"
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
        "moderation/detail.html",
        {
            "d": data,
            "nav": "focus" if focus else "queue",
            "sub_scores": sub_scores,
            "post": data.post,
            "claimed": claimed,
            "form": form,
            "focus": focus,
            "focus_params": _focus_params(request),
            "reason_codes": data.reason_codes,
            "undo_seconds": int(undo_window().total_seconds()),
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
        # Keyboard decisions from the queue (s/h) carry no reason; the note says so.
        form.fields["reason_code"].required = False
    if not form.is_valid():
        if wants_json(request):
            return json_error("Invalid decision.", code="invalid", status=400, fields=form.errors)
        messages.error(request, "Choose a label and a reason code.")
        return HttpResponseRedirect(reverse("moderation:post_detail", args=[post.pk]))
    try:
        decision = decision_record(
            post=post,
            moderator=request.user,
            label=form.cleaned_data["label"],
            reason_code=form.cleaned_data["reason_code"],
            note=form.cleaned_data["note"],
        )
    except ApplicationError as exc:
        if wants_json(request):
            return json_error(exc.message, code=exc.code, status=exc.status_code, fields=exc.fields)
        messages.error(request, exc.message)
        return HttpResponseRedirect(reverse("moderation:post_detail", args=[post.pk]))
    if wants_json(request):
        return JsonResponse({"post_id": post.pk, "decision_id": decision.pk, "status": decision.post.status})
    messages.success(request, f"Post #{post.pk} marked {decision.get_label_display().lower()}.")
    if request.POST.get("focus") == "1":
        return HttpResponseRedirect(with_query(reverse("moderation:focus"), _focus_params(request)))
    return redirect_next(request, reverse("moderation:post_detail", args=[post.pk]))


@require_POST
@role_required(CAN_MODERATE)
def release(request: HttpRequest, post_id: int) -> HttpResponse:
    post = get_object_or_404(Post, pk=post_id)
    claim_release(post=post, user=request.user)
    if request.POST.get("focus") == "1":
        skipped = [int(i) for i in request.session.get("focus_skip", [])][-200:]
        request.session["focus_skip"] = [*skipped, post.pk]
        # Skip: release this one and take the next. The skipped item stays in the queue.
        return HttpResponseRedirect(with_query(reverse("moderation:focus"), _focus_params(request)))
    return redirect_next(request, reverse("moderation:queue"))
