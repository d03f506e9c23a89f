"""The appeals queue and one appeal's review page (the original evidence and decision, the
author's statement, uphold or overturn)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from core.errors import ApplicationError
from dashboard.selectors.appeals import appeal_figures, appeal_status_counts, appeals_queue
from dashboard.selectors.thresholds import live_thresholds
from moderation.models import Appeal, AppealStatus, ReasonCode
from moderation.permissions import CAN_MODERATE, role_required
from moderation.services.appeals import REMOVED_STATUSES, appeal_can_resolve, appeal_outcome_label, appeal_resolve
from scoring.api import Score

OUTCOME_DONE = {"uphold": "decision upheld", "overturn": "decision overturned"}


class AppealForm(forms.Form):
    outcome = forms.ChoiceField(choices=[("uphold", "Uphold the decision"), ("overturn", "Overturn it")])
    reason_code = forms.ChoiceField(required=False)
    note = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        reason_field = self.fields["reason_code"]
        assert isinstance(reason_field, forms.ChoiceField)
        reason_field.choices = [("", "Default reason")] + [
            (r.code, f"{r.label} ({r.get_applies_to_display().lower()})")
            for r in ReasonCode.objects.filter(is_active=True)
        ]


@role_required(CAN_MODERATE)
def appeals(request: HttpRequest) -> HttpResponse:
    status = request.GET.get("status", AppealStatus.PENDING)
    if status not in AppealStatus.values:
        status = AppealStatus.PENDING
    context = {
        "nav": "appeals",
        "appeals": list(appeals_queue(status=status)[:200]),
        "status": status,
        "statuses": AppealStatus.choices,
        "status_counts": appeal_status_counts(),
        "figures": appeal_figures(),
        "thresholds": live_thresholds(),
    }
    return render(request, "dashboard/appeals.html", context)


@require_http_methods(["GET", "POST"])
@role_required(CAN_MODERATE)
def appeal(request: HttpRequest, appeal_id: int) -> HttpResponse:
    related = ("post__author", "post__source", "post__link__domain", "decision__moderator", "resolved_by")
    item = get_object_or_404(Appeal.objects.select_related(*related), pk=appeal_id)
    form = AppealForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            appeal_resolve(
                appeal=item,
                moderator=request.user,
                outcome=form.cleaned_data["outcome"],
                reason_code=form.cleaned_data["reason_code"],
                note=form.cleaned_data["note"],
            )
        except ApplicationError as exc:
            # The message goes beside the field it is about; the form keeps what was chosen.
            field = next((f for f in (exc.fields or {}) if f in form.fields), None)
            form.add_error(field, exc.message)
        else:
            messages.success(request, f"Appeal #{item.pk}: {OUTCOME_DONE[form.cleaned_data['outcome']]}.")
            return HttpResponseRedirect(reverse("dashboard:appeals"))
    score = Score.objects.filter(post=item.post).order_by("-created_at", "-id").first()
    context = {
        "nav": "appeals",
        "appeal": item,
        "post": item.post,
        "score": score,
        "form": form,
        "can_resolve": item.status == AppealStatus.PENDING and appeal_can_resolve(appeal=item, user=request.user),
        "reason_codes": list(ReasonCode.objects.filter(is_active=True)),
        "outcome_labels": {
            outcome: appeal_outcome_label(outcome=outcome, removed=item.post.status in REMOVED_STATUSES)
            for outcome in OUTCOME_DONE
        },
        "thresholds": live_thresholds(),
    }
    return render(request, "dashboard/appeal.html", context, status=400 if request.method == "POST" else 200)
