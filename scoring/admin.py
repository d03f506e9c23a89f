"""Admin for the pipeline: scores (read-only), decision policies (an edit saves a new audited
version), and the webhook delivery log (read-only, with a retry action)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from core.errors import ApplicationError
from scoring.models import DecisionPolicy, Score, WebhookDelivery
from scoring.services.policy import policy_create_version
from scoring.services.webhooks import webhook_retry


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Score)
class ScoreAdmin(ReadOnlyAdmin):
    list_display = ("id", "post", "final_score", "action", "model_set", "revision", "latency_ms", "created_at")
    list_filter = ("action", "model_set")
    search_fields = ("post__external_id", "model_set", "short_circuit_reason")
    list_select_related = ("post",)
    raw_id_fields = ("post", "policy")
    date_hierarchy = "created_at"


@admin.register(DecisionPolicy)
class DecisionPolicyAdmin(admin.ModelAdmin):
    """Saving the form never edits a row: it creates the next version and activates it."""

    list_display = (
        "version",
        "is_active",
        "remove_threshold",
        "approve_threshold",
        "escalate_threshold",
        "note",
        "created_by",
        "created_at",
    )
    list_filter = ("is_active",)
    fields = ("remove_threshold", "approve_threshold", "escalate_threshold", "note")
    readonly_fields = ("version", "is_active", "created_by", "created_at")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: DecisionPolicy, form: Any, change: bool) -> None:
        user = request.user if request.user.is_authenticated else None
        try:
            new = policy_create_version(
                remove_threshold=obj.remove_threshold,
                approve_threshold=obj.approve_threshold,
                escalate_threshold=obj.escalate_threshold,
                note=obj.note,
                actor=user,
            )
        except ApplicationError as exc:
            self.message_user(request, f"{exc.message}: {exc.fields}", level=messages.ERROR)
            return
        # The admin redirects to obj; point it at the new version.
        obj.pk, obj.version, obj.is_active = new.pk, new.version, new.is_active
        self.message_user(request, f"Policy version {new.version} is now active.", level=messages.SUCCESS)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    list_display = ("event_id", "source", "post", "event_type", "status", "attempts", "last_status_code", "created_at")
    list_filter = ("status", "event_type", "source")
    search_fields = ("event_id", "post__external_id", "last_error")
    list_select_related = ("source", "post")
    actions = ("retry_deliveries",)

    @admin.action(description="Send again")
    def retry_deliveries(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        count = 0
        for delivery in queryset.exclude(status=WebhookDelivery.Status.DELIVERED):
            webhook_retry(delivery=delivery)
            count += 1
        self.message_user(request, f"{count} deliveries queued again.", level=messages.SUCCESS)
