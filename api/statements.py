"""Statements of reasons over the API: one by its id, or the one of a decision."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.authentication import request_source
from api.statement_serializers import StatementOutputSerializer
from api.views import ERRORS, NOT_FOUND, JsonApiView
from moderation.models import ApiScope
from moderation.selectors.statements import statement_for_decision, statement_get_for_source


class StatementDetailView(JsonApiView):
    required_scopes = {"GET": ApiScope.READ}

    @extend_schema(
        operation_id="statements_retrieve",
        summary="A statement of reasons",
        description="The statement sent with a restriction (removal, hide, limit, suspension), in the fields of "
        "the EU DSA transparency database under `dsa`. Only the caller's source's statements are visible.",
        responses={200: StatementOutputSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, statement_id: int) -> Response:
        statement = statement_get_for_source(source=request_source(request), statement_id=statement_id)
        return Response(StatementOutputSerializer(statement).data)


class DecisionStatementView(JsonApiView):
    required_scopes = {"GET": ApiScope.READ}

    @extend_schema(
        operation_id="decisions_statement_retrieve",
        summary="The statement of reasons of a decision",
        description="The statement of a moderator's removal (`decision_id` of the post's decision or of the "
        "`statement_of_reasons` webhook event). 404 for an approval, which restricts nothing.",
        responses={200: StatementOutputSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, decision_id: int) -> Response:
        statement = statement_for_decision(source=request_source(request), decision_id=decision_id)
        return Response(StatementOutputSerializer(statement).data)
