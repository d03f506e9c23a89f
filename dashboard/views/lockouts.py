"""Login lockouts: the ones in force and an admin's Unlock, written to the audit log."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from moderation.permissions import CAN_ADMINISTER, role_required
from moderation.selectors.lockouts import LOCKOUT_KINDS, lockouts_current
from moderation.services.lockouts import lockout_lift


class UnlockForm(forms.Form):
    kind = forms.ChoiceField(choices=[(kind, kind) for kind in LOCKOUT_KINDS])
    value = forms.CharField(max_length=255)


@require_GET
@role_required(CAN_ADMINISTER)
def lockouts(request: HttpRequest) -> HttpResponse:
    context = {"rows": lockouts_current(now=timezone.now()), "nav": "lockouts"}
    return render(request, "dashboard/lockouts.html", context)


@require_POST
@role_required(CAN_ADMINISTER)
def unlock(request: HttpRequest) -> HttpResponse:
    form = UnlockForm(request.POST)
    if not form.is_valid():
        context = {"rows": lockouts_current(now=timezone.now()), "nav": "lockouts", "form": form}
        return render(request, "dashboard/lockouts.html", context, status=400)
    kind, value = form.cleaned_data["kind"], form.cleaned_data["value"]
    lockout_lift(actor=request.user, kind=kind, value=value)
    messages.success(request, f"Unlocked {'user' if kind == 'username' else 'address'} {value}.")
    return HttpResponseRedirect(reverse("dashboard:lockouts"))
