"""Django admin for the moderation domain. API keys are created through the Source action
(the raw key is shown once, in a message) and revoked through the ApiKey action; decisions
and the audit log are append-only and read-only here."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import models, transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from moderation import admin_users  # noqa: F401  (registers the role-limited user admin)
from moderation.categories import category_choices, policy_categories
from moderation.models import (
    ApiKey,
    ApiScope,
    Appeal,
    AuditLog,
    Author,
    BulkAction,
    Campaign,
    Decision,
    Domain,
    IpAddress,
    LadderRule,
    Link,
    ListStatus,
    Note,
    Post,
    ReasonCode,
    Report,
    ReporterRecord,
    Restriction,
    Source,
    SourceBlock,
    SourceDomainStats,
    SourceIpStats,
    SourceLinkStats,
    SpecialistQueue,
    StatementOfReasons,
    Strike,
)
from moderation.services.api_keys import api_key_create, api_key_revoke, api_key_scopes_set
from moderation.services.approval_levels import approval_level_set
from moderation.services.assignment import specialist_queue_deleted, specialist_queue_saved
from moderation.services.blocklists import BlockRefused, list_kind_of, list_status_set
from moderation.services.ladder import ladder_rule_delete, ladder_rule_save


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
    fields = ["name", "prefix", "scopes", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["name", "prefix", "scopes", "created_at", "last_used_at", "revoked_at"]
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ApiKeyForm(forms.ModelForm):
    """Name and scopes; the source only when the key is created (a key never changes source)."""

    scopes = forms.MultipleChoiceField(
        choices=ApiScope.choices,
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="What the key may do. A key without a scope can do nothing.",
    )

    class Meta:
        model = ApiKey
        fields = ["source", "name", "scopes"]


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "is_active", "approval_level", "callback_url", "created_at"]
    list_filter = ["is_active"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [ApiKeyInline]
    actions = ["create_api_key", "approval_start_over", "approval_full_band"]
    # Set by the actions (audited, the evidence restarts) and raised by scoring, never typed in: a
    # form opened before a raise would write the old level back.
    readonly_fields = ["approval_level", "approval_level_set_at"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    @admin.action(description="Earned approval: start over at level 0 (only the surest posts)")
    def approval_start_over(self, request: HttpRequest, queryset: QuerySet[Source]) -> None:
        self._approval_level(request, queryset, 0.0)

    @admin.action(description="Earned approval: open the policy's full band (level 1)")
    def approval_full_band(self, request: HttpRequest, queryset: QuerySet[Source]) -> None:
        self._approval_level(request, queryset, 1.0)

    def _approval_level(self, request: HttpRequest, queryset: QuerySet[Source], level: float) -> None:
        for source in queryset:
            approval_level_set(source=source, level=level, actor=request.user)
        self.message_user(request, f"Approval level set to {level:g} for {queryset.count()} source(s).")

    @admin.action(description="Create an API key (choose its scopes; shown once)")
    def create_api_key(self, request: HttpRequest, queryset: QuerySet[Source]) -> HttpResponse | None:
        source = queryset.first()
        if source is None:
            return None
        return HttpResponseRedirect(f"{reverse('admin:moderation_apikey_add')}?source={source.pk}")


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Keys are created here with their scopes (the raw key is shown once, in a message) and
    revoked by the action. Scopes stay editable; the secret never is."""

    form = ApiKeyForm
    list_display = ["prefix", "name", "source", "scope_list", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["source", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["prefix", "name", "source__slug"]
    list_select_related = ["source"]
    actions = ["revoke"]

    @admin.display(description="scopes")
    def scope_list(self, obj: ApiKey) -> str:
        return ", ".join(obj.scopes) if obj.scopes else "(none)"

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        if obj is None:
            return ("source", "name", "scopes")
        return ("source", "name", "scopes", "prefix", "created_at", "last_used_at", "revoked_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        if obj is None:
            return ()
        return ("source", "prefix", "created_at", "last_used_at", "revoked_at")

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        scopes = form.cleaned_data["scopes"]
        if change:
            if "name" in form.changed_data:
                obj.save(update_fields=["name"])
            api_key_scopes_set(api_key=obj, scopes=scopes)
            return
        created, raw_key = api_key_create(source=obj.source, name=obj.name, scopes=scopes)
        obj.pk, obj.prefix = created.pk, created.prefix
        self.message_user(
            request,
            f"New API key for {obj.source.slug}: {raw_key} - copy it now, it is not shown again.",
            level=messages.WARNING,
        )

    @admin.action(description="Revoke selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        count = 0
        for api_key in queryset.filter(revoked_at__isnull=True):
            api_key_revoke(api_key=api_key)
            count += 1
        self.message_user(request, f"Revoked {count} key(s).")


class GlobalListStatusForm(forms.ModelForm):
    """Refuses a global block of a public suffix, like the dashboard and the API do."""

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("status") == ListStatus.BLOCK:
            kind = list_kind_of(self.instance)
            try:
                kind.canonical(data.get(kind.key) or str(self.instance))
            except BlockRefused as exc:
                self.add_error("status", exc.message)
        return data


class GlobalListStatusAdmin(admin.ModelAdmin):
    """Domains and IPs: their status is the GLOBAL block list (every source's posts), so a
    change goes through moderation.services.blocklists and is audited with the user."""

    form = GlobalListStatusForm
    # A reason code and an expiry are set from the dashboard's enforcement form; a change here
    # sets the status without an expiry.
    readonly_fields = ["first_seen_at", "status_changed_at", "status_reason_code", "status_until"]

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        status, reason = obj.status, obj.status_reason
        if change and not {"status", "status_reason"} & set(form.changed_data):
            super().save_model(request, obj, form, change)
            return
        with transaction.atomic():
            if change:
                current = type(obj).objects.select_for_update().get(pk=obj.pk)
                other = [f for f in form.changed_data if f not in ("status", "status_reason")]
                for name in other:
                    setattr(current, name, getattr(obj, name))
                if other:
                    current.save(update_fields=other)
            else:  # a new row starts unlisted; its status is then set (and audited) as a change
                obj.status, obj.status_reason = ListStatus.UNKNOWN, ""
                super().save_model(request, obj, form, change)
                current = obj
            list_status_set(row=current, status=status, reason=reason, actor=request.user)


@admin.register(Domain)
class DomainAdmin(GlobalListStatusAdmin):
    list_display = ["name", "status", "status_reason", "post_count", "report_count", "spam_count", "first_seen_at"]
    list_filter = ["status"]
    search_fields = ["name"]
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
class IpAddressAdmin(GlobalListStatusAdmin):
    list_display = ["address", "status", "status_reason", "post_count", "spam_count", "first_seen_at"]
    list_filter = ["status"]
    search_fields = ["address"]


@admin.register(SourceBlock)
class SourceBlockAdmin(ReadOnlyAdmin):
    """A source's own blocks (set through its API key; they decide only its posts). Shown so
    operators can see them; the source lifts them through the API."""

    list_display = ["source", "kind", "value", "reason", "created_at"]
    list_filter = ["kind", "source"]
    search_fields = ["value", "reason", "source__slug"]
    list_select_related = ["source"]


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
    # Enforcement goes through the dashboard's form (reason, expiry, audit, webhook); erasure
    # through the action below.
    readonly_fields = [
        "created_at",
        "updated_at",
        "suspended_at",
        "suspended_reason",
        "suspended_reason_code",
        "suspended_until",
        "allowlisted_at",
        "allowlisted_reason",
        "allowlisted_reason_code",
        "allowlisted_until",
        "erased_at",
    ]
    actions = ["erase_personal_data"]

    @admin.action(description="Erase the personal data of the selected authors (on their request)")
    def erase_personal_data(self, request: HttpRequest, queryset: QuerySet[Author]) -> None:
        from moderation.services.erasure import author_erase

        erased = 0
        for author in queryset.filter(erased_at__isnull=True):
            author_erase(author=author, actor=request.user, via="admin")
            erased += 1
        self.message_user(request, f"Erased the personal data of {erased} author(s).")


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


class ReasonCodeForm(forms.ModelForm):
    # The configured categories (moderation.categories), read when the form is built.
    category = forms.ChoiceField(choices=category_choices, help_text="The harm a decision with this reason is about.")

    class Meta:
        model = ReasonCode
        fields = ["code", "label", "applies_to", "category", "is_active", "ordering"]


@admin.register(ReasonCode)
class ReasonCodeAdmin(admin.ModelAdmin):
    form = ReasonCodeForm
    list_display = ["code", "label", "applies_to", "category", "is_active", "ordering"]
    list_filter = ["applies_to", "category", "is_active"]
    search_fields = ["code", "label"]
    list_editable = ["is_active", "ordering"]


@admin.register(Appeal)
class AppealAdmin(ReadOnlyAdmin):
    """Appeals arrive through the API and are reviewed on the dashboard's appeals page."""

    list_display = ["pk", "post", "appealed_status", "status", "decision", "resolved_by", "created_at", "resolved_at"]
    list_filter = ["status", "appealed_status"]
    search_fields = ["post__external_id"]
    list_select_related = ["post", "decision", "resolved_by"]
    raw_id_fields = ["post", "decision", "resolved_by", "source"]


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


@admin.register(SourceDomainStats)
class SourceDomainStatsAdmin(ReadOnlyAdmin):
    """Kept by ingest, scoring, decisions and reports (moderation.services.source_stats): the
    per-source counts the features read. Read-only here."""

    list_display = ["domain", "source", "post_count", "spam_count", "report_count", "first_seen_at"]
    list_filter = ["source"]
    search_fields = ["domain__name"]
    list_select_related = ["source", "domain"]


@admin.register(SourceLinkStats)
class SourceLinkStatsAdmin(ReadOnlyAdmin):
    """See SourceDomainStatsAdmin."""

    list_display = ["link", "source", "post_count", "first_seen_at"]
    list_filter = ["source"]
    search_fields = ["link__url"]
    list_select_related = ["source", "link"]


@admin.register(SourceIpStats)
class SourceIpStatsAdmin(ReadOnlyAdmin):
    """See SourceDomainStatsAdmin."""

    list_display = ["ip", "source", "post_count", "spam_count", "first_seen_at"]
    list_filter = ["source"]
    search_fields = ["ip__address"]
    list_select_related = ["source", "ip"]


@admin.register(Campaign)
class CampaignAdmin(ReadOnlyAdmin):
    """Opened and grown by scoring's campaign detection and decided from the dashboard's
    campaign page (moderation.services.campaigns). Read-only here."""

    list_display = ["id", "source", "member_count", "author_count", "decided_label", "first_seen_at", "last_seen_at"]
    list_filter = ["source", "decided_label"]
    list_select_related = ["source"]


class LadderRuleForm(forms.ModelForm):
    # The configured categories (moderation.categories), read when the form is built.
    category = forms.ChoiceField(choices=policy_categories, help_text="The harm whose strikes this rung counts.")

    class Meta:
        model = LadderRule
        fields = ["source", "category", "strikes", "window_days", "action", "duration_days", "is_active"]


@admin.register(LadderRule)
class LadderRuleAdmin(admin.ModelAdmin):
    """The escalation ladder per source and category; every change is audited."""

    form = LadderRuleForm

    list_display = ["source", "category", "strikes", "window_days", "action", "duration_days", "is_active"]
    list_filter = ["source", "category", "action", "is_active"]

    def save_model(self, request: HttpRequest, obj: LadderRule, form: Any, change: bool) -> None:
        ladder_rule_save(rule=obj, actor=request.user)

    def delete_model(self, request: HttpRequest, obj: LadderRule) -> None:
        ladder_rule_delete(rule=obj, actor=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for rule in queryset:
            ladder_rule_delete(rule=rule, actor=request.user)


@admin.register(StatementOfReasons)
class StatementOfReasonsAdmin(ReadOnlyAdmin):
    list_display = ["pk", "source", "action", "category", "automated", "application_date", "reversed_at"]
    list_filter = ["source", "action", "category", "automated"]
    readonly_fields = ["fields"]


@admin.register(Strike)
class StrikeAdmin(ReadOnlyAdmin):
    """Warnings are given and revoked from the dashboard (audited, the platform told)."""

    list_display = ["pk", "author", "category", "reason_code", "created_at", "expires_at", "revoked_at"]
    list_filter = ["category"]
    raw_id_fields = ["author", "post"]


@admin.register(Restriction)
class RestrictionAdmin(ReadOnlyAdmin):
    """Imposed and lifted from the dashboard (audited, the platform told)."""

    list_display = ["pk", "author", "post", "kind", "category", "created_at", "ends_at", "lifted_at"]
    list_filter = ["kind", "category"]
    raw_id_fields = ["author", "post"]


class SpecialistQueueForm(forms.ModelForm):
    # The configured categories (moderation.categories), read when the form is built.
    category = forms.ChoiceField(choices=policy_categories, help_text="The harm this queue's moderators handle.")

    class Meta:
        model = SpecialistQueue
        fields = ["name", "category", "auto_route", "members"]


@admin.register(SpecialistQueue)
class SpecialistQueueAdmin(admin.ModelAdmin):
    """A queue per category and its members (moderation.services.assignment); every change is
    audited."""

    form = SpecialistQueueForm
    list_display = ["name", "category", "auto_route"]
    filter_horizontal = ["members"]

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        specialist_queue_saved(queue=form.instance, actor=request.user, created=not change)

    def delete_model(self, request: HttpRequest, obj: SpecialistQueue) -> None:
        specialist_queue_deleted(queue=obj, actor=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for queue in queryset:
            specialist_queue_deleted(queue=queue, actor=request.user)


@admin.register(Note)
class NoteAdmin(ReadOnlyAdmin):
    """Written, edited and deleted from the dashboard by their writers (audited)."""

    list_display = ["pk", "author", "post", "written_by", "via", "created_at", "edited_at"]
    raw_id_fields = ["author", "post"]
