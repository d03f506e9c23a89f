"""Users in the Django admin, limited for the dashboard "admin" role so it cannot escalate.

The admin role manages moderators and analysts: it adds users, sets their dashboard roles,
activates and deactivates them. It never sees or touches what would make anyone more than a
dashboard role: superuser status, per-user permissions, groups other than the dashboard roles,
and superusers themselves (they are not listed and their pages answer "not found"). Superusers
keep Django's full user admin. Group editing is for superusers only (the admin role holds no
auth.group permission since moderation 0013)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import Group
from django.db.models import QuerySet
from django.http import HttpRequest

from moderation.permissions import Role

User = get_user_model()

ROLE_LIMITED_FIELDSETS = (
    (None, {"fields": ("username", "password")}),
    ("Personal info", {"fields": ("first_name", "last_name", "email")}),
    ("Dashboard access", {"fields": ("is_active", "is_staff", "groups")}),
    ("Important dates", {"fields": ("last_login", "date_joined")}),
)


def dashboard_role_groups() -> QuerySet[Group]:
    return Group.objects.filter(name__in=[role.value for role in Role])


class RoleLimitedUserAdmin(UserAdmin):
    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        users = super().get_queryset(request)
        return users if request.user.is_superuser else users.filter(is_superuser=False)

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None or request.user.is_superuser:
            return super().get_fieldsets(request, obj)
        return ROLE_LIMITED_FIELDSETS

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if request.user.is_superuser:
            return super().get_readonly_fields(request, obj)
        return ("last_login", "date_joined")

    def get_list_filter(self, request: HttpRequest) -> Any:
        if request.user.is_superuser:
            return super().get_list_filter(request)
        return ("is_staff", "is_active", "groups")

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "groups" and not request.user.is_superuser:
            kwargs["queryset"] = dashboard_role_groups()
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        if request.user.is_superuser or "groups" not in form.cleaned_data:
            super().save_related(request, form, formsets, change)
            return
        # The form offers only the role groups; groups outside them that the user already had
        # (set by a superuser) are kept, not silently dropped.
        kept = list(form.instance.groups.exclude(pk__in=dashboard_role_groups()))
        super().save_related(request, form, formsets, change)
        form.instance.groups.add(*kept)


if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, RoleLimitedUserAdmin)
