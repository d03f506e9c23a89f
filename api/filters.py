from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import django_filters
from django import forms
from django_filters.fields import IsoDateTimeField

from moderation.models import SourceBlock


class UtcIsoDateTimeField(IsoDateTimeField):
    """ISO 8601, normalised to UTC: Python accepts offsets up to +-23:59, PostgreSQL only
    +-15:59, so an exotic offset reached SQL and failed there (found by the API fuzz test)."""

    def to_python(self, value: Any) -> datetime | None:
        # Present but empty (?blocked_before=) is not a date-time: a 400, as the schema says;
        # absent (None) is no filter.
        if value == "":
            raise forms.ValidationError("Enter a date and time.", code="invalid")
        parsed: datetime | None = super().to_python(value)
        if parsed is None:
            return None
        try:
            return parsed.astimezone(UTC)
        except (OverflowError, ValueError) as exc:
            raise forms.ValidationError("Date and time out of range.", code="invalid") from exc


class UtcIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField


class _SourceBlockFilter(django_filters.FilterSet):
    """What both block lists filter on; each adds a filter on its value."""

    reason = django_filters.CharFilter(field_name="reason", lookup_expr="icontains")
    blocked_after = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    blocked_before = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = SourceBlock
        fields: list[str] = []


class DomainFilter(_SourceBlockFilter):
    name = django_filters.CharFilter(field_name="value", lookup_expr="icontains", help_text="Part of the domain name.")


class IpAddressFilter(django_filters.Filter):
    # Validated (and canonicalised) before it is compared with the stored canonical address.
    field_class = forms.GenericIPAddressField


class IpFilter(_SourceBlockFilter):
    address = IpAddressFilter(field_name="value", lookup_expr="exact")
