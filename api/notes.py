"""Notes on the source's posts and authors over the API: the platform's trust and safety staff
read what moderators noted, and add their own (moderation.services.notes)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import generics, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from api.authentication import request_source
from api.fields import StrictCharField
from api.pagination import IdCursorPagination
from api.parsers import StrictJSONParser
from api.serializers import InputSerializer, external_id_field
from api.views import BODY_ERRORS, CURSOR_NOT_FOUND, ERRORS, NOT_FOUND, clean_path_value
from moderation.models import ApiScope, Note
from moderation.selectors.notes import note_subject_for_source, notes_for_source
from moderation.services.notes import NOTE_MAX_LENGTH, note_create

SUBJECT_FIELDS = ("post_external_id", "author_external_id")


def _one_subject(values: dict[str, Any]) -> None:
    given = [name for name in SUBJECT_FIELDS if values.get(name)]
    if len(given) != 1:
        message = "Give exactly one of post_external_id and author_external_id."
        raise ValidationError({name: [message] for name in SUBJECT_FIELDS})


class NoteInputSerializer(InputSerializer):
    post_external_id = external_id_field(required=False)
    author_external_id = external_id_field(required=False)
    text = StrictCharField(max_length=NOTE_MAX_LENGTH, trim_whitespace=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        _one_subject(attrs)
        return attrs


class NoteOutputSerializer(serializers.ModelSerializer):
    post_external_id = serializers.CharField(source="post.external_id", allow_null=True, default=None)
    author_external_id = serializers.CharField(source="author.external_id")
    via = serializers.CharField(help_text='"dashboard" (a moderator) or "api:<source>" (sent through the API).')

    class Meta:
        model = Note
        fields = ["id", "post_external_id", "author_external_id", "text", "via", "created_at", "edited_at"]


@extend_schema_view(
    get=extend_schema(
        operation_id="notes_list",
        summary="Notes on one of this source's posts or authors",
        description=(
            "Newest first. `post_external_id`: the notes on that post; `author_external_id`: every note about "
            "the author (on them and on their posts). Exactly one of the two. 404 for an unknown id (or "
            "another source's)."
        ),
        parameters=[
            OpenApiParameter("post_external_id", str, OpenApiParameter.QUERY),
            OpenApiParameter("author_external_id", str, OpenApiParameter.QUERY),
        ],
        responses={200: NoteOutputSerializer(many=True), **ERRORS, **NOT_FOUND, **CURSOR_NOT_FOUND},
    ),
    post=extend_schema(
        operation_id="notes_create",
        summary="Add a note on one of this source's posts or authors",
        description=(
            "A note is context for moderators, not a decision: it changes no status. Exactly one of "
            "`post_external_id` and `author_external_id`. 201 with the note; 404 for an unknown id (or "
            "another source's, or an erased author)."
        ),
        request=NoteInputSerializer,
        responses={201: NoteOutputSerializer, **BODY_ERRORS, **NOT_FOUND},
        examples=[
            OpenApiExample(
                "Note on an author",
                request_only=True,
                value={"author_external_id": "u-77", "text": "Second account of u-12, per our support team."},
            )
        ],
    ),
)
class NotesView(generics.GenericAPIView):
    required_scopes = {"GET": ApiScope.READ, "POST": ApiScope.NOTES_WRITE}
    parser_classes = [StrictJSONParser]
    pagination_class = IdCursorPagination
    serializer_class = NoteOutputSerializer

    def get_queryset(self) -> QuerySet[Note]:
        if getattr(self, "swagger_fake_view", False):  # schema generation: no caller
            return Note.objects.none()
        values = {name: clean_path_value(self.request.query_params.get(name, "")) or "" for name in SUBJECT_FIELDS}
        _one_subject(values)
        source = request_source(self.request)
        post, author = note_subject_for_source(source=source, **values)
        return notes_for_source(source=source, post=post, author=author)

    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def post(self, request: Request) -> Response:
        serializer = NoteInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        source = request_source(request)
        post, author = note_subject_for_source(
            source=source,
            post_external_id=data.get("post_external_id", ""),
            author_external_id=data.get("author_external_id", ""),
        )
        note = note_create(text=data["text"], writer=None, post=post, author=author, via=f"api:{source.slug}")
        return Response(NoteOutputSerializer(note).data, status=status.HTTP_201_CREATED)
