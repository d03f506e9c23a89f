"""Dashboard forms that are more than a button: the enforcement form (reason code, note,
expiry) replaces a browser confirm()."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import forms
from django.utils import timezone

from moderation.models import ReasonCode
from moderation.services.enforcement import EnforcementReason


class EnforcementForm(forms.Form):
    reason_code = forms.ChoiceField(label="Reason", required=False)
    note = forms.CharField(label="Note", required=False, max_length=255, widget=forms.Textarea(attrs={"rows": 2}))
    expires_at = forms.DateTimeField(
        label="Expires",
        required=False,
        help_text="Empty: until lifted. Your time zone.",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"],
    )

    def __init__(self, *args: Any, imposing: bool, timed: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.imposing = imposing
        codes = [(r.code, r.label) for r in ReasonCode.objects.filter(is_active=True)]
        reason_field = self.fields["reason_code"]
        assert isinstance(reason_field, forms.ChoiceField)
        reason_field.choices = [("", "Choose a reason…"), *codes]
        reason_field.required = imposing
        if not imposing or not timed:
            del self.fields["expires_at"]

    def clean_expires_at(self) -> datetime | None:
        value: datetime | None = self.cleaned_data.get("expires_at")
        if value is not None and value <= timezone.now():
            raise forms.ValidationError("The expiry must be in the future.")
        return value

    def reason(self) -> EnforcementReason:
        data = self.cleaned_data
        return EnforcementReason(
            code=data.get("reason_code", ""), note=data.get("note", ""), until=data.get("expires_at")
        )
