"""The platform's API. Views only parse, call one service or selector, and render.

This package sits above both the moderation workflow and the scoring path
(docs/architecture.md): POST /api/v1/posts?wait_ms stores the post through moderation's ingest
and then runs scoring's pre-publish check, the one request that needs both."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import generics, status
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api import serializers as s
from api.authentication import request_source
from api.errors import fields_of, flatten_errors
from api.fields import unicode_problem
from api.filters import DomainFilter, IpFilter
from api.pagination import IdCursorPagination
from api.parsers import StrictJSONParser
from api.post_input import PostInputValidator
from api.selectors import post_get_for_source
from core.errors import NotFound
from moderation.models import ApiScope, Author, BlockKind, Post, PostStatus, Source, SourceBlock
from moderation.selectors.blocklists import source_blocks
from moderation.services.appeals import appeal_submit
from moderation.services.authors import author_upsert
from moderation.services.blocklists import LIST_KINDS, source_block_add, source_block_remove
from moderation.services.content_hash import content_differs
from moderation.services.erasure import author_erase
from moderation.services.ingest import post_ingest, posts_ingest_batch
from moderation.services.reports import report_create
from scoring import api as scoring_api
from scoring.api import Score

logger = logging.getLogger(__name__)

ERRORS = {
    400: OpenApiResponse(s.ErrorSerializer, description="Invalid input; `fields` maps field paths to messages."),
    401: OpenApiResponse(s.ErrorSerializer, description="Missing, invalid or revoked API key."),
    403: OpenApiResponse(s.ErrorSerializer, description="`insufficient_scope`: the key lacks this endpoint's scope."),
    429: OpenApiResponse(s.ErrorSerializer, description="Rate limit of this API key; see Retry-After."),
    503: OpenApiResponse(
        s.ErrorSerializer, description="`unavailable`: the database or cache is down; retry after Retry-After."
    ),
}
BODY_ERRORS = {
    **ERRORS,
    413: OpenApiResponse(s.ErrorSerializer, description="Body (or batch) too large."),
    415: OpenApiResponse(s.ErrorSerializer, description="Content-Type must be application/json."),
}
NOT_FOUND = {404: OpenApiResponse(s.ErrorSerializer, description="Not found (or another source's).")}
CURSOR_NOT_FOUND = {404: OpenApiResponse(s.ErrorSerializer, description="Invalid or expired `cursor`.")}

POST_EXAMPLE = {
    "external_id": "p-1001",
    "text": "Win a free phone, click now!",
    "url": "https://promo.example.com/win?ref=42",
    "preview": {"title": "You won!", "description": "Claim today", "text": "Enter your card number"},
    "author": {
        "external_id": "u-77",
        "username": "lucky77",
        "account_created_at": "2026-11-20T08:00:00Z",
        "email_domain": "mailinator.com",
        "friends_count": 3,
        "followers_count": 0,
        "verified": False,
        "post_count": 40,
        "spam_post_count": 2,
        "spam_report_count": 5,
    },
    "ip": "203.0.113.9",
    "journey": [
        {"step": "open_composer", "at": "2026-11-21T10:00:00Z"},
        {"step": "paste", "at": "2026-11-21T10:00:01Z"},
        {"step": "submit", "at": "2026-11-21T10:00:01Z"},
    ],
    "share_count": 0,
    "comment_count": 0,
    "created_at": "2026-11-21T10:00:01Z",
}
INVALID_EXAMPLE = OpenApiExample(
    "Invalid input",
    response_only=True,
    status_codes=["400"],
    value={
        "error": {
            "code": "invalid",
            "message": "The request is not valid.",
            "fields": {"author.external_id": ["This field is required."]},
            "details": [{"field": "author.external_id", "code": "required", "message": "This field is required."}],
        }
    },
)


class BatchTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "Too many posts in one batch."
    default_code = "batch_too_large"


def clean_path_value(value: str, *, max_length: int = 255) -> str | None:
    """A URL path parameter that is safe to send to SQL, or None."""
    if len(value) > max_length or unicode_problem(value):
        return None
    return value


def _ingest_checked(*, source: Source, payload: dict[str, Any], wait_ms: int | None) -> tuple[Post, bool, bool]:
    """post_ingest, inside scoring's pre-publish hold when the caller waits (?wait_ms): then a
    new post is held for the check before its commit and gets no task of its own. Returns
    (post, created, held)."""
    if wait_ms is None:
        post, created = post_ingest(source=source, payload=payload)
        return post, created, False
    with scoring_api.prepublish_hold(budget_ms=wait_ms) as check:
        post, created = post_ingest(source=source, payload=payload)
    return post, created, check.holds(post.pk)


def _score_within(post: Post, budget_ms: int, *, held: bool) -> Score | None:
    """The post's latest score if inline scoring answered within the budget, else None.
    `held`: the new post was held for this check (_ingest_checked)."""
    if post.status == PostStatus.RECEIVED:
        try:
            # The scorer brings `post` up to date with the score it returns.
            outcome: Score | None = scoring_api.score_inline(post=post, budget_ms=budget_ms, held=held)
        except Exception:
            # Inline scoring is best effort: the queued task scores the post anyway.
            logger.warning("moderation.inline_score_failed post_id=%s", post.pk, exc_info=True)
            return None
        return outcome
    return Score.objects.filter(post=post).order_by("-created_at", "-id").first()


class JsonApiView(APIView):
    parser_classes = [StrictJSONParser]


class PostCreateView(JsonApiView):
    required_scopes = {"POST": ApiScope.POSTS_WRITE}

    @extend_schema(
        operation_id="posts_create",
        summary="Ingest one post",
        description=(
            "Stores the post once per (source, external_id): 201 when new, 200 with the stored post when "
            "the external_id was sent before with the same content, 409 `idempotency_conflict` (with the "
            "stored post's `id` and `content_hash`) when it was sent before with other content. "
            "Scoring is enqueued after commit. With `?wait_ms=N` "
            "(0..1000) the call waits up to N ms for the inline score: 201/200 with `score` when it "
            "arrived, 202 Accepted when the budget ran out."
        ),
        parameters=[s.WaitQuerySerializer],
        request=s.PostInputSerializer,
        responses={
            201: s.PostIngestOutputSerializer,
            200: s.PostIngestOutputSerializer,
            202: OpenApiResponse(
                s.PostIngestOutputSerializer, description="Stored; the inline score did not arrive in time."
            ),
            **BODY_ERRORS,
            409: OpenApiResponse(
                s.ConflictErrorSerializer,
                description="`idempotency_conflict`: this external_id was stored with other content "
                "(text, url, preview, author, created_at); `id` and `content_hash` are the stored post's.",
            ),
        },
        examples=[
            OpenApiExample("Post with link, author and journey", value=POST_EXAMPLE, request_only=True),
            OpenApiExample(
                "Created",
                response_only=True,
                status_codes=["201"],
                value={
                    "id": 1,
                    "external_id": "p-1001",
                    "status": "received",
                    "final_score": None,
                    "model_version": "",
                    "received_at": "2026-11-21T10:00:02Z",
                    "score": None,
                },
            ),
            INVALID_EXAMPLE,
        ],
    )
    def post(self, request: Request) -> Response:
        query = s.WaitQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        # The same validator as every batch item: one set of rules, one error shape.
        payload = PostInputValidator().validate(request.data)
        wait_ms = query.validated_data.get("wait_ms")
        post, created, held = _ingest_checked(source=request_source(request), payload=payload, wait_ms=wait_ms)
        code: int = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        score = None
        if wait_ms is not None:
            score = _score_within(post, wait_ms, held=held)
            if score is None:
                code = status.HTTP_202_ACCEPTED
        return Response(s.PostIngestOutputSerializer(post, context={"score": score}).data, status=code)


class PostBatchView(JsonApiView):
    required_scopes = {"POST": ApiScope.POSTS_WRITE, "GET": ApiScope.READ}

    @extend_schema(
        operation_id="posts_batch",
        summary="Ingest up to INGEST_BATCH_MAX posts",
        description=(
            f'Body: `{{"posts": [...]}}` with at most {settings.INGEST_BATCH_MAX} items (413 above). Each item '
            "is validated and stored on its own: the 207 body reports per item `created`, `existing`, `conflict` (the "
            "external_id was stored with other content: `id` and `content_hash` are the stored post's) "
            "or `invalid` (with field errors); invalid items never block valid ones."
        ),
        request=s.PostBatchInputSerializer,
        responses={207: s.PostBatchOutputSerializer, **BODY_ERRORS},
        examples=[
            OpenApiExample(
                "Two posts",
                value={"posts": [POST_EXAMPLE, {**POST_EXAMPLE, "external_id": "p-1002"}]},
                request_only=True,
            ),
            OpenApiExample(
                "Mixed results",
                response_only=True,
                status_codes=["207"],
                value={
                    "created": 1,
                    "existing": 0,
                    "conflict": 0,
                    "invalid": 1,
                    "results": [
                        {"index": 0, "external_id": "p-1001", "status": "created", "id": 1, "errors": {}},
                        {
                            "index": 1,
                            "external_id": "p-1002",
                            "status": "invalid",
                            "id": None,
                            "errors": {"url": ["The URL scheme must be http or https."]},
                        },
                    ],
                },
            ),
        ],
    )
    def post(self, request: Request) -> Response:
        data = request.data
        limit = settings.INGEST_BATCH_MAX
        if isinstance(data, dict) and isinstance(data.get("posts"), list) and len(data["posts"]) > limit:
            raise BatchTooLarge(f"A batch holds at most {limit} posts; got {len(data['posts'])}.")
        envelope = s.PostBatchInputSerializer(data=data)
        envelope.is_valid(raise_exception=True)
        items: list[Any] = envelope.validated_data["posts"]
        results: list[dict[str, Any]] = [{} for _ in items]
        valid: list[tuple[int, dict[str, Any]]] = []
        # One validator for every item, as for a single post (api.post_input).
        validator = PostInputValidator()
        error_budget = BATCH_ERRORS_MAX
        for index, item in enumerate(items):
            try:
                valid.append((index, validator.validate(item)))
            except ValidationError as exc:
                results[index] = _invalid_row(index, item, exc, limit=max(1, min(BATCH_ITEM_ERRORS_MAX, error_budget)))
                error_budget -= sum(len(messages) for messages in results[index]["errors"].values())
        ingested = posts_ingest_batch(source=request_source(request), payloads=[payload for _, payload in valid])
        for (index, payload), (post, created) in zip(valid, ingested, strict=True):
            results[index] = {
                "index": index,
                "external_id": post.external_id,
                "status": "created" if created else "existing",
                "id": post.pk,
                "errors": {},
            }
            if not created and content_differs(stored_hash=post.content_hash, payload=payload):
                results[index].update(status="conflict", errors=dict(CONFLICT_ERRORS), content_hash=post.content_hash)
        body = {
            "created": sum(r["status"] == "created" for r in results),
            "existing": sum(r["status"] == "existing" for r in results),
            "conflict": sum(r["status"] == "conflict" for r in results),
            "invalid": sum(r["status"] == "invalid" for r in results),
            "results": results,
        }
        return Response(body, status=status.HTTP_207_MULTI_STATUS)

    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        # posts/batch shadows GET posts/<external_id> for the external_id "batch".
        return PostDetailView().get(request, external_id="batch")


CONFLICT_ERRORS = {"external_id": ["A post with this external_id was stored with different content."]}
# Errors listed per invalid item, and in the whole response; once the response's budget is
# spent every further invalid item lists its first error only. 500 bad items answer a few
# hundred KB at most (each entry: a path of at most 64 client characters, a clipped message).
BATCH_ITEM_ERRORS_MAX = 10
BATCH_ERRORS_MAX = 1000


def _invalid_row(index: int, item: Any, exc: ValidationError, *, limit: int) -> dict[str, Any]:
    errors, truncated = flatten_errors(exc.detail, limit=limit)
    row: dict[str, Any] = {
        "index": index,
        "external_id": _echo_external_id(item),
        "status": "invalid",
        "id": None,
        "errors": fields_of(errors),
    }
    if truncated:
        row["truncated"] = True
    return row


def _echo_external_id(item: Any) -> str | None:
    """The item's external_id for the result row, only when it is safe to echo back."""
    value = item.get("external_id") if isinstance(item, dict) else None
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    text = str(value) if not isinstance(value, int) or abs(value) < 2**63 else None
    return clean_path_value(text) if text is not None else None


class PostDetailView(JsonApiView):
    """Also reached through PostBatchView.get for a post whose external_id is "batch"."""

    required_scopes = {"GET": ApiScope.READ}

    @extend_schema(
        operation_id="posts_retrieve",
        summary="A post's status, scores and decision",
        description="Only the caller's source's posts are visible; others answer 404.",
        responses={200: s.PostOutputSerializer, **ERRORS, **NOT_FOUND},
        examples=[
            OpenApiExample(
                "Scored and queued",
                response_only=True,
                status_codes=["200"],
                value={
                    "id": 1,
                    "external_id": "p-1001",
                    "author_external_id": "u-77",
                    "url": "https://promo.example.com/win?ref=42",
                    "status": "queued",
                    "status_changed_at": "2026-11-21T10:00:02Z",
                    "final_score": 0.74,
                    "category_scores": {"spam": 0.74, "abuse": 0.03},
                    "model_version": "text:3,link:1,behaviour:1,fusion:2",
                    "scored_at": "2026-11-21T10:00:02Z",
                    "report_count": 1,
                    "created_at": "2026-11-21T10:00:01Z",
                    "received_at": "2026-11-21T10:00:02Z",
                    "scores": [
                        {
                            "model_set": "text:3,link:1,behaviour:1,fusion:2",
                            "revision": 0,
                            "final_score": 0.74,
                            "action": "queue",
                            "text_score": 0.81,
                            "preview_score": 0.66,
                            "link_score": 0.58,
                            "behaviour_score": 0.77,
                            "abuse_score": 0.03,
                            "short_circuit_reason": "",
                            "model_versions": {"text": "3", "link": "1", "behaviour": "1", "fusion": "2"},
                            "latency_ms": 12.5,
                            "created_at": "2026-11-21T10:00:02Z",
                        }
                    ],
                    "decision": None,
                },
            )
        ],
    )
    def get(self, request: Request, external_id: str) -> Response:
        clean = clean_path_value(external_id)
        if clean is None:
            raise NotFound("No post with this external_id.", code="post_not_found")
        post = post_get_for_source(source=request_source(request), external_id=clean)
        return Response(s.PostOutputSerializer(post).data)


class ReportCreateView(JsonApiView):
    required_scopes = {"POST": ApiScope.REPORTS_WRITE}

    @extend_schema(
        operation_id="reports_create",
        summary="Report a post (a platform user's complaint)",
        description="Idempotent on (post, reporter_id, reason): 201 when new, 200 when already recorded.",
        request=s.ReportInputSerializer,
        responses={201: s.ReportOutputSerializer, 200: s.ReportOutputSerializer, **BODY_ERRORS, **NOT_FOUND},
        examples=[
            OpenApiExample(
                "Report",
                request_only=True,
                value={"post_external_id": "p-1001", "reporter_id": "u-12", "reason": "spam", "details": "scam link"},
            ),
            INVALID_EXAMPLE,
        ],
    )
    def post(self, request: Request) -> Response:
        serializer = s.ReportInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        report, created = report_create(source=request_source(request), **serializer.validated_data)
        return Response(
            s.ReportOutputSerializer(report).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class AppealCreateView(JsonApiView):
    required_scopes = {"POST": ApiScope.APPEALS_WRITE}

    @extend_schema(
        operation_id="appeals_create",
        summary="Appeal a decision on a post (the author's statement)",
        description=(
            "Opens an appeal against the current decision on one of this source's posts (removed or "
            "approved, by a moderator or automatically). A moderator other than the one who decided "
            "upholds or overturns it; the outcome arrives as an `appeal.decided` webhook event, and an "
            "overturn also as a `post.decision` event. 201 when opened, 200 when the post already has "
            "an open appeal (that one is returned). 409 `not_decided` for a post still waiting."
        ),
        request=s.AppealInputSerializer,
        responses={
            201: s.AppealOutputSerializer,
            200: s.AppealOutputSerializer,
            409: OpenApiResponse(s.ErrorSerializer, description="`not_decided`: nothing to appeal yet."),
            **BODY_ERRORS,
            **NOT_FOUND,
        },
        examples=[
            OpenApiExample(
                "Appeal",
                request_only=True,
                value={"post_external_id": "p-1001", "statement": "This is my own shop, not a scam."},
            ),
            INVALID_EXAMPLE,
        ],
    )
    def post(self, request: Request) -> Response:
        serializer = s.AppealInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        appeal, created = appeal_submit(source=request_source(request), **serializer.validated_data)
        return Response(
            s.AppealOutputSerializer(appeal).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class AuthorUpsertView(JsonApiView):
    required_scopes = {"PUT": ApiScope.AUTHORS_WRITE}

    @extend_schema(
        operation_id="authors_upsert",
        summary="Create or update an author profile",
        description="Fields left out keep their stored value. 201 when created, 200 when updated.",
        request=s.AuthorInputSerializer,
        responses={201: s.AuthorOutputSerializer, 200: s.AuthorOutputSerializer, **BODY_ERRORS},
        examples=[
            OpenApiExample(
                "Profile",
                request_only=True,
                value={k: v for k, v in POST_EXAMPLE["author"].items() if k != "external_id"},  # type: ignore[attr-defined]
            ),
            INVALID_EXAMPLE,
        ],
    )
    def put(self, request: Request, external_id: str) -> Response:
        clean = clean_path_value(external_id)
        if clean is None:
            raise ValidationError({"external_id": ["Not a valid external id."]}, code="invalid")
        serializer = s.AuthorInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        author, created = author_upsert(
            source=request_source(request), external_id=clean, profile=serializer.validated_data
        )
        return Response(
            s.AuthorOutputSerializer(author).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class AuthorEraseView(JsonApiView):
    required_scopes = {"POST": ApiScope.AUTHORS_ERASE}

    @extend_schema(
        operation_id="authors_erase",
        summary="Erase an author's personal data (a data subject's request)",
        description=(
            "Erases the profile, every post's text, link, preview, journey and IP address (the posts "
            "stay as tombstones with their id, status and decision), report details, decision notes and "
            "appeal statements on those posts, and the author's rows in labelled examples and dataset "
            "files. The author's external id is replaced: a later post with the same id starts a new "
            "author. 200 with what was erased; 404 for an unknown (or another source's, or an already "
            "erased) author."
        ),
        request=s.ErasureInputSerializer,
        responses={
            200: s.AuthorErasedSerializer,
            **BODY_ERRORS,
            **NOT_FOUND,
        },
        examples=[OpenApiExample("Erasure", request_only=True, value={"author_external_id": "u-77"}), INVALID_EXAMPLE],
    )
    def post(self, request: Request) -> Response:
        source = request_source(request)
        serializer = s.ErasureInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        external_id = serializer.validated_data["author_external_id"]
        author = Author.objects.filter(source=source, external_id=external_id, erased_at__isnull=True).first()
        if author is None:
            raise NotFound("No author with this external_id.", code="author_not_found")
        erased = author_erase(author=author, actor=None, via=f"api:{source.slug}")
        return Response(s.AuthorErasedSerializer(erased).data)


class _SourceBlocklistView(generics.GenericAPIView):
    """The calling source's own block list of one kind: blocks here decide that source's posts
    only, and only that source sees them (moderation.services.blocklists)."""

    # A subclass names the kind, its input serializer and the input field carrying the value;
    # a comment, not the docstring: drf-spectacular publishes the docstring.
    required_scopes = {"GET": ApiScope.READ, "POST": ApiScope.BLOCKS_WRITE}

    parser_classes = [StrictJSONParser]
    pagination_class = IdCursorPagination
    kind: BlockKind
    input_serializer_class: type[s.InputSerializer]
    input_field: str

    def get_queryset(self) -> QuerySet[SourceBlock]:
        if getattr(self, "swagger_fake_view", False):  # schema generation: no caller
            return SourceBlock.objects.none()
        return source_blocks(source=request_source(self.request), kind=self.kind)

    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def post(self, request: Request) -> Response:
        serializer = self.input_serializer_class(data=request.data)
        serializer.is_valid(raise_exception=True)
        block, created = source_block_add(
            source=request_source(request),
            kind=self.kind,
            value=serializer.validated_data[self.input_field],
            reason=serializer.validated_data["reason"],
        )
        return Response(
            self.get_serializer(block).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class _SourceBlockDetailView(JsonApiView):
    # One block of the calling source's list; the URL's last segment is the value.
    required_scopes = {"DELETE": ApiScope.BLOCKS_WRITE}
    kind: BlockKind
    value_max_length: int

    def delete(self, request: Request, **kwargs: str) -> Response:
        (value,) = kwargs.values()
        clean = clean_path_value(value, max_length=self.value_max_length)
        if clean is None:
            raise NotFound(f"This {LIST_KINDS[self.kind].noun} is not on your block list.", code="not_blocked")
        source_block_remove(source=request_source(request), kind=self.kind, value=clean)
        return Response(status=status.HTTP_204_NO_CONTENT)


@dataclass(frozen=True)
class _BlocklistApi:
    """What the API says differently about one kind of block list."""

    kind: BlockKind
    segment: str  # blocklist/<segment> and the operation ids
    one: str  # "a domain"
    many: str  # "domains"
    input_serializer: type[s.InputSerializer]
    input_field: str
    output_serializer: type[Any]
    filterset: type[Any]
    path_name: str  # blocklist/<segment>/<path_name>
    path_max_length: int
    create_description: str
    example: dict[str, str]


def _blocklist_views(api: _BlocklistApi) -> tuple[type[_SourceBlocklistView], type[_SourceBlockDetailView]]:
    """The list/create view and the delete view of one kind, with their OpenAPI operations."""
    list_view = extend_schema_view(
        get=extend_schema(
            operation_id=f"blocklist_{api.segment}_list",
            summary=f"This source's blocked {api.many}",
            responses={200: api.output_serializer(many=True), **ERRORS, **CURSOR_NOT_FOUND},
        ),
        post=extend_schema(
            operation_id=f"blocklist_{api.segment}_create",
            summary=f"Block {api.one} for this source's posts",
            description=api.create_description,
            request=api.input_serializer,
            responses={201: api.output_serializer, 200: api.output_serializer, **BODY_ERRORS},
            examples=[OpenApiExample("Block", request_only=True, value=api.example)],
        ),
    )(
        type(
            f"{api.kind.name.title()}BlocklistView",
            (_SourceBlocklistView,),
            {
                "__module__": __name__,
                "__doc__": _SourceBlocklistView.__doc__,
                "kind": api.kind,
                "filterset_class": api.filterset,
                "serializer_class": api.output_serializer,
                "input_serializer_class": api.input_serializer,
                "input_field": api.input_field,
            },
        )
    )
    detail_view = extend_schema_view(
        delete=extend_schema(
            operation_id=f"blocklist_{api.segment}_destroy",
            summary=f"Lift this source's block of {api.one}",
            description="404 when this source has not blocked it.",
            parameters=[OpenApiParameter(api.path_name, str, OpenApiParameter.PATH)],
            responses={204: None, **ERRORS, **NOT_FOUND},
        )
    )(
        type(
            f"{api.kind.name.title()}BlocklistDetailView",
            (_SourceBlockDetailView,),
            {"__module__": __name__, "kind": api.kind, "value_max_length": api.path_max_length},
        )
    )
    return list_view, detail_view


DomainBlocklistView, DomainBlocklistDetailView = _blocklist_views(
    _BlocklistApi(
        kind=BlockKind.DOMAIN,
        segment="domains",
        one="a domain",
        many="domains",
        input_serializer=s.DomainBlockInputSerializer,
        input_field="domain",
        output_serializer=s.DomainBlockOutputSerializer,
        filterset=DomainFilter,
        path_name="name",
        path_max_length=2048,
        create_description=(
            "`domain` may be a host or a URL; its registrable domain is blocked (a.b.example.co.uk -> "
            "example.co.uk). This source's posts linking to it are then removed without running the "
            "models; other sources' posts are not affected. A public suffix (`com`, `co.uk`) is refused "
            "with 400. 201 when newly blocked, 200 when it already was."
        ),
        example={"domain": "promo.example.com", "reason": "phishing"},
    )
)
IpBlocklistView, IpBlocklistDetailView = _blocklist_views(
    _BlocklistApi(
        kind=BlockKind.IP,
        segment="ips",
        one="an IP address",
        many="IP addresses",
        input_serializer=s.IpBlockInputSerializer,
        input_field="address",
        output_serializer=s.IpBlockOutputSerializer,
        filterset=IpFilter,
        path_name="address",
        path_max_length=64,
        create_description="One address; ranges are refused with 400. 201 when newly blocked, 200 when it already was.",
        example={"address": "203.0.113.9", "reason": "spam bursts"},
    )
)
