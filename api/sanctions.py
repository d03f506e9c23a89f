"""An author's warnings (strikes) and restrictions over the API, for the platform to show the
author their standing."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from api.authentication import request_source
from api.views import ERRORS, NOT_FOUND, JsonApiView, clean_path_value
from moderation.models import ApiScope, RestrictionKind
from moderation.selectors.sanctions import author_sanctions_for_source


class StrikeOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    category = serializers.CharField(help_text="The policy category (moderation.categories).")
    reason_code = serializers.CharField()
    post_external_id = serializers.CharField(source="post.external_id", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    revoked_at = serializers.DateTimeField(allow_null=True)


class RestrictionOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=RestrictionKind.choices)
    category = serializers.CharField(help_text="The policy category (moderation.categories).")
    reason_code = serializers.CharField()
    post_external_id = serializers.CharField(source="post.external_id", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField(allow_null=True)
    lifted_at = serializers.DateTimeField(allow_null=True)


class SanctionsOutputSerializer(serializers.Serializer):
    author_external_id = serializers.CharField(source="author.external_id")
    strikes = StrikeOutputSerializer(many=True)
    restrictions = RestrictionOutputSerializer(many=True)


class SanctionsView(JsonApiView):
    required_scopes = {"GET": ApiScope.READ}

    @extend_schema(
        operation_id="sanctions_retrieve",
        summary="An author's strikes and restrictions",
        description="Warnings (strikes, per policy category, with their expiry or revocation) and restrictions "
        "(hidden posts, rate and reach limits, lifted or not), newest first, up to 200 each. Only the caller's "
        "source's authors; another's answers 404.",
        parameters=[OpenApiParameter("author_external_id", str, OpenApiParameter.QUERY, required=True)],
        responses={200: SanctionsOutputSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request) -> Response:
        external_id = clean_path_value(request.query_params.get("author_external_id", ""))
        if not external_id:
            raise ValidationError({"author_external_id": ["This field is required."]})
        sanctions = author_sanctions_for_source(source=request_source(request), external_id=external_id)
        return Response(SanctionsOutputSerializer(sanctions).data)
