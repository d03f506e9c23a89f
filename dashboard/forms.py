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

    def __init__(self, *args: Any, imposing: bool, reason_label: str | None, timed: bool = True, **kwargs: Any) -> None:
        """`reason_label`: the label this action's reasons belong to (the service refuses the
        others); None offers every active reason. `timed`: the form asks for an expiry (a
        warning's strike expires by itself)."""
        super().__init__(*args, **kwargs)
        self.imposing = imposing
        reasons = ReasonCode.objects.filter(is_active=True)
        if reason_label is not None:
            reasons = reasons.filter(applies_to=reason_label)
        codes = [(r.code, r.label) for r in reasons]
        reason_field = self.fields["reason_code"]
        assert isinstance(reason_field, forms.ChoiceField)
        reason_field.choices = [("", "Choose a reason…"), *codes]
        reason_field.required = imposing
        if not imposing or not timed:
            del self.fields["expires_at"]
        else:
            zone = timezone.get_current_timezone_name()
            abbr = timezone.localtime().strftime("%Z")
            suffix = f" ({abbr})" if abbr and abbr != zone else ""
            self.fields["expires_at"].help_text = f"Empty: until lifted. In your time zone, {zone}{suffix}."

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
