"""Django admin for the moderation domain. API keys are created through the Source action
(the raw key is shown once, in a message) and revoked through the ApiKey action; decisions
and the audit log are append-only and read-only here."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest

from moderation.models import (
    ApiKey,
    AuditLog,
    Author,
    BulkAction,
    Decision,
    Domain,
    IpAddress,
    Link,
    Post,
    ReasonCode,
    Report,
    ReporterRecord,
    Source,
)
from moderation.services.api_keys import api_key_create, api_key_revoke


class ReadOnlyAdmin(admin.ModelAdmin):
    """Append-only records: visible, never added, edited or deleted through the admin."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    extra = 0
    can_delete = False
    fields = ["name", "prefix", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["name", "prefix", "created_at", "last_used_at", "revoked_at"]
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "is_active", "callback_url", "created_at"]
    list_filter = ["is_active"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [ApiKeyInline]
    actions = ["create_api_key"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    @admin.action(description="Create an API key (shown once)")
    def create_api_key(self, request: HttpRequest, queryset: QuerySet[Source]) -> None:
        for source in queryset:
            _, raw_key = api_key_create(source=source, name=f"admin:{request.user}")
            self.message_user(
                request,
                f"New API key for {source.slug}: {raw_key} - copy it now, it is not shown again.",
                level=messages.WARNING,
            )


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["prefix", "name", "source", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["source", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["prefix", "name", "source__slug"]
    list_select_related = ["source"]
    readonly_fields = ["source", "prefix", "hashed_key", "created_at", "last_used_at", "revoked_at"]
    fields = ["source", "name", "prefix", "hashed_key", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # keys are created by the Source action so the raw key can be shown once

    @admin.action(description="Revoke selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        count = 0
        for api_key in queryset.filter(revoked_at__isnull=True):
            api_key_revoke(api_key=api_key)
            count += 1
        self.message_user(request, f"Revoked {count} key(s).")


@admin.register(Domain)
class DomainAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "status",
        "status_reason",
        "status_source",
        "post_count",
        "report_count",
        "spam_count",
        "first_seen_at",
    ]
    list_filter = ["status", "status_source"]
    search_fields = ["name"]
    list_select_related = ["status_source"]
    readonly_fields = ["first_seen_at", "status_changed_at", "status_source"]
    ordering = ["-post_count"]


@admin.register(Link)
class LinkAdmin(admin.ModelAdmin):
    list_display = ["url", "domain", "post_count", "report_count", "first_seen_at"]
    list_filter = ["domain__status"]
    search_fields = ["url", "host", "domain__name"]
    list_select_related = ["domain"]
    raw_id_fields = ["domain"]
    readonly_fields = ["url_hash", "first_seen_at"]


@admin.register(IpAddress)
class IpAddressAdmin(admin.ModelAdmin):
    list_display = ["address", "status", "status_reason", "status_source", "post_count", "spam_count", "first_seen_at"]
    list_filter = ["status", "status_source"]
    search_fields = ["address"]
    list_select_related = ["status_source"]
    readonly_fields = ["first_seen_at", "status_changed_at", "status_source"]


@admin.register(Author)
class AuthorAdmin(admin.ModelAdmin):
    list_display = [
        "external_id",
        "username",
        "source",
        "verified",
        "post_count",
        "spam_count",
        "platform_spam_report_count",
        "account_created_at",
        "suspended_at",
    ]
    list_filter = ["source", "verified", ("suspended_at", admin.EmptyFieldListFilter)]
    search_fields = ["external_id", "username", "email_domain"]
    list_select_related = ["source"]
    raw_id_fields = ["source"]
    readonly_fields = ["created_at", "updated_at"]


class ReportInline(admin.TabularInline):
    model = Report
    extra = 0
    fields = ["reporter_id", "reason", "details", "created_at"]
    readonly_fields = ["reporter_id", "reason", "details", "created_at"]
    can_delete = False


@admin.register(Post)
class PostAdmin(admin.ModelAdmin):
    list_display = [
        "external_id",
        "source",
        "author",
        "status",
        "final_score",
        "report_count",
        "model_version",
        "received_at",
    ]
    list_filter = ["status", "source", "received_at"]
    search_fields = ["external_id", "text", "url", "author__external_id", "author__username"]
    list_select_related = ["source", "author"]
    raw_id_fields = ["source", "author", "link", "ip", "claimed_by"]
    readonly_fields = ["received_at", "status_changed_at", "scored_at", "final_score", "model_version", "report_count"]
    date_hierarchy = "received_at"
    inlines = [ReportInline]
    show_full_result_count = False  # COUNT(*) over all posts is the slow part of the changelist


@admin.register(Report)
class ReportAdmin(admin.ModelAdmin):
    list_display = ["post", "reporter_id", "reason", "created_at"]
    list_filter = ["reason", "created_at"]
    search_fields = ["reporter_id", "post__external_id", "details"]
    list_select_related = ["post"]
    raw_id_fields = ["post"]


@admin.register(ReasonCode)
class ReasonCodeAdmin(admin.ModelAdmin):
    list_display = ["code", "label", "applies_to", "is_active", "ordering"]
    list_filter = ["applies_to", "is_active"]
    search_fields = ["code", "label"]
    list_editable = ["is_active", "ordering"]


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = ["post", "label", "reason_code", "moderator", "bulk_action", "created_at", "undone_at"]
    list_filter = ["label", "reason_code", "created_at", ("undone_at", admin.EmptyFieldListFilter)]
    search_fields = ["post__external_id", "moderator__username", "note"]
    list_select_related = ["post", "moderator", "bulk_action"]
    raw_id_fields = ["post", "moderator", "bulk_action"]
    date_hierarchy = "created_at"


@admin.register(BulkAction)
class BulkActionAdmin(ReadOnlyAdmin):
    list_display = ["id", "label", "moderator", "created_at", "undone_at"]
    list_filter = ["label", "created_at"]
    search_fields = ["moderator__username"]
    list_select_related = ["moderator"]


@admin.register(AuditLog)
class AuditLogAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "action", "actor", "target_type", "target_id"]
    list_filter = ["action", "target_type", "created_at"]
    search_fields = ["action", "target_id", "actor__username"]
    list_select_related = ["actor"]
    date_hierarchy = "created_at"


@admin.register(ReporterRecord)
class ReporterRecordAdmin(ReadOnlyAdmin):
    """Kept by moderator decisions (moderation.services.priority): read-only here."""

    list_display = ["reporter_id", "source", "upheld", "rejected", "updated_at"]
    list_filter = ["source"]
    search_fields = ["reporter_id"]
    list_select_related = ["source"]
