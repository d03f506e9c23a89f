"""Django admin for the feedback loop. Examples and datasets are read-only (they are frozen);
retraining, promotion and rollback go through the services so permissions and audit apply."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from feedback.models import DatasetMember, DatasetVersion, LabelledExample, ModelVersion, TrainingRun


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


@admin.register(DatasetVersion)
class DatasetVersionAdmin(ReadOnlyAdmin):
    list_display = ("version", "name", "origin", "example_count", "spam_count", "ham_count", "created_by", "created_at")
    readonly_fields = ("content_sha256", "manifest")


@admin.register(DatasetMember)
class DatasetMemberAdmin(ReadOnlyAdmin):
    list_display = ("dataset", "example", "split")
    list_filter = ("split",)


@admin.register(TrainingRun)
class TrainingRunAdmin(ReadOnlyAdmin):
    list_display = ("id", "dataset", "scope", "status", "progress", "started_by", "created_at", "finished_at")
    list_filter = ("status", "scope")


@admin.register(ModelVersion)
class ModelVersionAdmin(ReadOnlyAdmin):
    list_display = ("name", "version", "is_production", "dataset", "promoted_by", "promoted_at")
    list_filter = ("name", "is_production")
