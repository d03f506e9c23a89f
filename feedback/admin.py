"""Django admin for the feedback loop. Examples and datasets are read-only (they are frozen);
retraining, promotion and rollback go through the services so permissions and audit apply."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from core.errors import ApplicationError
from feedback.models import (
    DatasetMember,
    DatasetVersion,
    EvaluationSuite,
    LabelledExample,
    ModelVersion,
    SuiteReference,
    TrainingRun,
    TrainingScope,
)
from feedback.permissions import can_administer_ml
from feedback.services.suite_references import references_clear


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(LabelledExample)
class LabelledExampleAdmin(ReadOnlyAdmin):
    list_display = ("id", "label", "origin", "source_slug", "post_external_id", "decided_by_username", "decided_at")
    list_filter = ("label", "origin", "source_slug", "decided_by_admin")
    search_fields = ("text", "post_external_id", "author_external_id")
    date_hierarchy = "decided_at"


def _start_runs(request: HttpRequest, queryset: QuerySet[DatasetVersion], scope: str) -> None:
    # Imported on use: admin modules load in every Django process (web, worker, beat) and the
    # training services pull in scikit-learn, SciPy, pandas and XGBoost.
    from feedback.services.training import training_run_start

    for dataset in queryset.order_by("-version")[:1]:  # one run at a time: the newest selected
        try:
            run = training_run_start(dataset=dataset, scope=scope, started_by=request.user)
        except ApplicationError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, f"Run #{run.pk} ({scope}) queued on dataset v{dataset.version}.")


@admin.register(DatasetVersion)
class DatasetVersionAdmin(ReadOnlyAdmin):
    list_display = ("version", "name", "origin", "example_count", "spam_count", "ham_count", "created_by", "created_at")
    readonly_fields = ("content_sha256", "manifest")
    actions = ("retrain_tabular", "retrain_text", "retrain_all")

    @admin.action(description="Retrain feature models + fusion on this dataset (admins only)")
    def retrain_tabular(self, request: HttpRequest, queryset: QuerySet[DatasetVersion]) -> None:
        _start_runs(request, queryset, TrainingScope.TABULAR)

    @admin.action(description="Fine-tune the text model on this dataset (admins only)")
    def retrain_text(self, request: HttpRequest, queryset: QuerySet[DatasetVersion]) -> None:
        _start_runs(request, queryset, TrainingScope.TEXT)

    @admin.action(description="Retrain everything on this dataset (admins only)")
    def retrain_all(self, request: HttpRequest, queryset: QuerySet[DatasetVersion]) -> None:
        _start_runs(request, queryset, TrainingScope.ALL)


@admin.register(DatasetMember)
class DatasetMemberAdmin(ReadOnlyAdmin):
    list_display = ("dataset", "example", "split")
    list_filter = ("split",)


@admin.register(TrainingRun)
class TrainingRunAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "dataset",
        "scope",
        "training_data",
        "status",
        "progress",
        "started_by",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "scope", "training_data")


@admin.register(ModelVersion)
class ModelVersionAdmin(ReadOnlyAdmin):
    list_display = ("name", "version", "is_production", "dataset", "promoted_by", "promoted_at")
    list_filter = ("name", "is_production")


@admin.register(EvaluationSuite)
class EvaluationSuiteAdmin(ReadOnlyAdmin):
    """Suites are frozen; an admin marks a dataset as a suite from its page in the dashboard."""

    list_display = ("name", "kind", "dataset", "row_count", "spam_count", "featured_count", "created_at")
    list_filter = ("kind",)
    readonly_fields = ("content_sha256", "path")


@admin.register(SuiteReference)
class SuiteReferenceAdmin(ReadOnlyAdmin):
    """The gate's floor per suite and bundle (feedback.services.suite_references): recorded by the
    gate, cleared only by the action below, which audits it (the delete button would not)."""

    list_display = ("suite", "bundle", "metrics", "production_version", "created_at")
    list_filter = ("bundle",)
    list_select_related = ("suite",)
    actions = ["clear"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_clear_permission(self, request: HttpRequest) -> bool:
        return can_administer_ml(request.user)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    @admin.action(
        description="Clear: the next comparison records the production of that day as the reference",
        permissions=["clear"],
    )
    def clear(self, request: HttpRequest, queryset: QuerySet[SuiteReference]) -> None:
        count = references_clear(references=queryset, actor=request.user)
        self.message_user(
            request, f"{count} reference(s) cleared; the next comparison on each suite records a new one."
        )
