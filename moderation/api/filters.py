from __future__ import annotations

import django_filters
from django import forms

from moderation.models import Domain, IpAddress


class DomainFilter(django_filters.FilterSet):
    name = django_filters.CharFilter(field_name="name", lookup_expr="icontains", help_text="Part of the domain name.")
    reason = django_filters.CharFilter(field_name="status_reason", lookup_expr="icontains")
    blocked_after = django_filters.IsoDateTimeFilter(field_name="status_changed_at", lookup_expr="gte")
    blocked_before = django_filters.IsoDateTimeFilter(field_name="status_changed_at", lookup_expr="lt")

    class Meta:
        model = Domain
        fields = ["name", "reason", "blocked_after", "blocked_before"]


class IpAddressFilter(django_filters.Filter):
    # Validated before it reaches SQL: PostgreSQL's inet cast fails on anything else.
    field_class = forms.GenericIPAddressField


class IpFilter(django_filters.FilterSet):
    address = IpAddressFilter(field_name="address", lookup_expr="exact")
    reason = django_filters.CharFilter(field_name="status_reason", lookup_expr="icontains")
    blocked_after = django_filters.IsoDateTimeFilter(field_name="status_changed_at", lookup_expr="gte")
    blocked_before = django_filters.IsoDateTimeFilter(field_name="status_changed_at", lookup_expr="lt")

    class Meta:
        model = IpAddress
        fields = ["address", "reason", "blocked_after", "blocked_before"]
