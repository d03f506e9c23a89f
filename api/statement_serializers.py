"""Output serializers of statements of reasons. The DSA fields are spelled out so the OpenAPI
schema documents them; a field that does not apply to a restriction is absent."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from moderation.services.statements import statement_data


class DsaStatementSerializer(serializers.Serializer):
    """The statement in the EU DSA transparency database's submission fields."""

    decision_visibility = serializers.ListField(child=serializers.CharField(), required=False)
    end_date_visibility_restriction = serializers.CharField(required=False, help_text="YYYY-MM-DD")
    decision_monetary = serializers.CharField(required=False)
    end_date_monetary_restriction = serializers.CharField(required=False)
    decision_provision = serializers.CharField(required=False)
    end_date_service_restriction = serializers.CharField(required=False)
    decision_account = serializers.CharField(required=False)
    end_date_account_restriction = serializers.CharField(required=False)
    account_type = serializers.CharField(required=False)
    decision_ground = serializers.ChoiceField(
        choices=["DECISION_GROUND_ILLEGAL_CONTENT", "DECISION_GROUND_INCOMPATIBLE_CONTENT"]
    )
    decision_ground_reference_url = serializers.CharField(required=False)
    illegal_content_legal_ground = serializers.CharField(required=False)
    illegal_content_explanation = serializers.CharField(required=False)
    incompatible_content_ground = serializers.CharField(required=False)
    incompatible_content_explanation = serializers.CharField(required=False)
    incompatible_content_illegal = serializers.CharField(required=False)
    category = serializers.CharField(help_text="STATEMENT_CATEGORY_...")
    content_type = serializers.ListField(child=serializers.CharField())
    content_language = serializers.CharField(required=False)
    content_date = serializers.CharField(required=False, help_text="YYYY-MM-DD")
    application_date = serializers.CharField(help_text="YYYY-MM-DD")
    territorial_scope = serializers.ListField(child=serializers.CharField())
    decision_facts = serializers.CharField()
    source_type = serializers.CharField()
    automated_detection = serializers.ChoiceField(choices=["Yes", "No"])
    automated_decision = serializers.ChoiceField(
        choices=["AUTOMATED_DECISION_FULLY", "AUTOMATED_DECISION_PARTIALLY", "AUTOMATED_DECISION_NOT_AUTOMATED"]
    )
    puid = serializers.CharField()


class StatementOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    action = serializers.ChoiceField(choices=["removal", "hide", "limit_rate", "limit_reach", "suspension"])
    category = serializers.CharField(help_text="The policy category (spam, scam, abuse, ...).")
    decision_id = serializers.IntegerField(allow_null=True)
    restriction_id = serializers.IntegerField(allow_null=True)
    post_external_id = serializers.CharField(allow_null=True)
    author_external_id = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    reversed_at = serializers.DateTimeField(allow_null=True, help_text="Set when the restriction was reversed.")
    dsa = DsaStatementSerializer()

    def to_representation(self, instance: Any) -> dict[str, Any]:
        return statement_data(instance)
