"""Input parsing for the ML pages (views stay thin: parse, call one service, render)."""

from __future__ import annotations

from typing import Any

from django import forms

from feedback.models import DatasetVersion, TrainingData, TrainingScope
from feedback.services.datasets import IMPORT_MAX_BYTES


class SnapshotForm(forms.Form):
    name = forms.CharField(max_length=120, required=False)
    model = forms.ChoiceField(
        choices=[
            ("spam", "Spam model: spam and scam/phishing labels, approvals"),
            ("abuse", "Abuse model: abuse/harassment and hate labels, approvals"),
        ],
        initial="spam",
        required=False,
        help_text="Which model the dataset trains: a decision trains only the models of its category.",
    )
    sources = forms.CharField(
        max_length=500, required=False, help_text="Comma-separated source slugs; empty means every source."
    )
    since = forms.DateTimeField(required=False)
    until = forms.DateTimeField(required=False)

    def source_list(self) -> list[str]:
        return [s.strip() for s in self.cleaned_data.get("sources", "").split(",") if s.strip()]


class ImportForm(forms.Form):
    file = forms.FileField(
        help_text=f"JSONL or CSV with at least text and label; up to {IMPORT_MAX_BYTES // 2**20} MB."
    )
    name = forms.CharField(max_length=120, required=False)
    source = forms.SlugField(max_length=60, initial="import")

    def fmt(self) -> str:
        name = self.cleaned_data["file"].name.lower()
        return "csv" if name.endswith(".csv") else "jsonl"

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        if upload.size > IMPORT_MAX_BYTES:
            raise forms.ValidationError(f"The file is larger than {IMPORT_MAX_BYTES // 2**20} MB.")
        if not upload.name.lower().endswith((".csv", ".jsonl", ".json", ".ndjson")):
            raise forms.ValidationError("Upload a .jsonl or .csv file.")
        return upload


class RunStartForm(forms.Form):
    dataset = forms.ModelChoiceField(queryset=DatasetVersion.objects.order_by("-version"), empty_label=None)
    scope = forms.ChoiceField(choices=TrainingScope.choices, initial=TrainingScope.TABULAR)
    training_data = forms.ChoiceField(
        choices=TrainingData.choices,
        initial=TrainingData.CUMULATIVE,
        widget=forms.RadioSelect,
        required=False,
        help_text="Training on one dataset alone can make the model forget what it learned before.",
    )
    auto_promote = forms.BooleanField(
        required=False, help_text="Promote automatically if better on every guarded metric."
    )

    def clean_training_data(self) -> str:
        # Not chosen means the default: cumulative labels with replay.
        return str(self.cleaned_data.get("training_data") or TrainingData.CUMULATIVE)


class ThresholdsForm(forms.Form):
    remove_threshold = forms.FloatField(min_value=0.0, max_value=1.0)
    approve_threshold = forms.FloatField(min_value=0.0, max_value=1.0)
    days = forms.IntegerField(min_value=1, max_value=365, initial=7, required=False)
    note = forms.CharField(max_length=255, required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        remove, approve = data.get("remove_threshold"), data.get("approve_threshold")
        if remove is not None and approve is not None and approve > remove:
            self.add_error("approve_threshold", "The approve threshold must not exceed the remove threshold.")
        return data


class PromoteForm(forms.Form):
    """The confirmation page's form. `confirm` is always required; a candidate the gate holds
    back also needs a typed override reason (checked again by promotion.promote_run)."""

    confirm = forms.BooleanField(required=True, label="I have reviewed what changes")
    note = forms.CharField(max_length=255, required=False)
    override_reason = forms.CharField(max_length=1000, required=False, widget=forms.Textarea(attrs={"rows": 3}))


class SuiteMarkForm(forms.Form):
    name = forms.CharField(max_length=120, required=False)
