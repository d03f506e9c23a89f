"""Input serializers validate at the edge (precise field errors, nothing the database would
reject); output serializers render. They are separate on purpose: the input is the platform's
vocabulary, the output ours."""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from itertools import islice
from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail
from rest_framework.fields import SkipField
from rest_framework.relations import PKOnlyObject
from rest_framework.utils.serializer_helpers import BindingDict

from api.errors import FIELD_ERRORS_MAX
from api.fields import (
    URL_MAX_CHARS,
    BoundedDateTimeField,
    BoundedIntegerField,
    BoundedListField,
    ExternalIdField,
    HttpUrlField,
    IpAddressField,
    StrictBooleanField,
    StrictCharField,
)
from moderation.links import InvalidUrl, link_identity
from moderation.models import Appeal, Author, Campaign, Decision, Post, Report, SourceBlock
from moderation.services.blocklists import BlockRefused, block_domain_value
from scoring.api import Score

POSTS_SINCE = datetime(2000, 1, 1, tzinfo=UTC)
ACCOUNTS_SINCE = datetime(1990, 1, 1, tzinfo=UTC)
EXTERNAL_ID_MAX = 255


def external_id_field(**kwargs: Any) -> ExternalIdField:
    return ExternalIdField(max_length=EXTERNAL_ID_MAX, **kwargs)


# --- input ----------------------------------------------------------------------------------


@functools.cache
def _shared_fields(serializer_class: type[serializers.Serializer]) -> BindingDict:
    prototype = serializer_class()
    fields = BindingDict(prototype)
    for name, field in prototype.get_fields().items():
        fields[name] = field
    return fields


# A JSON object with only the declared fields: a misspelt or unsupported field (say author.email
# for author.email_domain) is an error naming it, not silently dropped. The OpenAPI schema says
# so too (additionalProperties: false, api.schema). A comment, not a docstring:
# drf-spectacular would publish an inherited docstring as every input component's description.
class InputSerializer(serializers.Serializer):
    default_error_messages = {"unknown_field": "Unknown field."}

    # DRF deep-copies every declared field (nested serializers included) for each instance:
    # ~0.6 ms of the ~0.8 ms validating one post. Validation keeps no state on the fields and
    # these serializers read no context, so each class's fields are built once and shared
    # (validate_<field> methods and errors are still this instance's).
    @property
    def fields(self) -> BindingDict:
        return _shared_fields(type(self))

    def to_internal_value(self, data: Any) -> Any:
        # Only the first few unknown keys are named: a body of a million keys is one error list
        # of bounded size, not a million entries (api.errors caps what is listed).
        fields = self.fields
        unknown = (
            sorted(str(key) for key in islice((k for k in data if k not in fields), FIELD_ERRORS_MAX + 1))
            if isinstance(data, dict)
            else []
        )
        errors: dict[str, Any] = {
            key: [ErrorDetail(str(self.error_messages["unknown_field"]), code="unknown_field")] for key in unknown
        }
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if errors and isinstance(exc.detail, dict):
                raise serializers.ValidationError({**exc.detail, **errors}) from exc
            raise
        if errors:
            raise serializers.ValidationError(errors)
        return value


class AuthorProfileInputSerializer(InputSerializer):
    """Profile fields a platform may send; all optional, absent ones keep their stored value."""

    username = StrictCharField(required=False, allow_blank=True, max_length=255)
    account_created_at = BoundedDateTimeField(
        required=False,
        allow_null=True,
        not_before=ACCOUNTS_SINCE,
        help_text="From 1990-01-01 to one day after now.",
    )
    email_domain = StrictCharField(required=False, allow_blank=True, max_length=253, trim_whitespace=True)
    friends_count = BoundedIntegerField(required=False)
    followers_count = BoundedIntegerField(required=False)
    verified = StrictBooleanField(required=False)
    post_count = BoundedIntegerField(required=False, source="platform_post_count")
    spam_post_count = BoundedIntegerField(required=False, source="platform_spam_post_count")
    spam_report_count = BoundedIntegerField(required=False, source="platform_spam_report_count")

    def validate_email_domain(self, value: str) -> str:
        # Accept a whole address but keep only its domain: the service never stores the address.
        return value.rpartition("@")[2].strip().lower().rstrip(".")


class EmbeddedAuthorInputSerializer(AuthorProfileInputSerializer):
    external_id = external_id_field()


class PreviewInputSerializer(InputSerializer):
    title = StrictCharField(required=False, allow_blank=True, max_length=500)
    description = StrictCharField(required=False, allow_blank=True, max_length=settings.PREVIEW_TEXT_MAX_CHARS)
    text = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=settings.PREVIEW_TEXT_MAX_CHARS,
        help_text="Text of the linked page, OCR of its images, transcripts of its videos.",
    )


class JourneyStepInputSerializer(InputSerializer):
    step = StrictCharField(max_length=64, trim_whitespace=True)
    at = BoundedDateTimeField(not_before=POSTS_SINCE, help_text="From 2000-01-01 to one day after now.")


@extend_schema_field(
    {"type": "string", "nullable": True, "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}, {"maxLength": 0}]}
)
class PostIpField(IpAddressField):
    """The author's IP address; empty or null when the platform has none."""


class PostInputSerializer(InputSerializer):
    external_id = external_id_field()
    author = EmbeddedAuthorInputSerializer()
    text = StrictCharField(required=False, allow_blank=True, default="", max_length=settings.POST_TEXT_MAX_CHARS)
    url = HttpUrlField(required=False, allow_blank=True, allow_null=True, default="")
    preview = PreviewInputSerializer(required=False, allow_null=True)
    ip = PostIpField(required=False, allow_null=True, allow_blank=True, default=None)
    journey = BoundedListField(
        child=JourneyStepInputSerializer(),
        required=False,
        default=list,
        max_length=settings.JOURNEY_MAX_STEPS,
        help_text="UI steps the author took to post, in order.",
    )
    share_count = BoundedIntegerField(required=False, default=0)
    comment_count = BoundedIntegerField(required=False, default=0)
    created_at = BoundedDateTimeField(
        not_before=POSTS_SINCE,
        help_text="When the author posted, platform clock: from 2000-01-01 to one day after now.",
    )

    def validate_url(self, value: str | None) -> str:
        if not value:
            return ""
        try:
            normalized, _, _ = link_identity(value)
        except InvalidUrl as exc:
            message = "Enter a valid http or https URL with a host."
            raise serializers.ValidationError(message, code="invalid_url") from exc
        if len(normalized) > URL_MAX_CHARS:
            raise serializers.ValidationError("The URL is too long once normalized.", code="max_length")
        return value

    def validate_ip(self, value: str | None) -> str | None:
        return value or None

    def validate_journey(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for index in range(1, len(value)):
            if value[index]["at"] < value[index - 1]["at"]:
                raise serializers.ValidationError(
                    {index: {"at": ["Journey steps must be in chronological order."]}},  # type: ignore[dict-item]
                    code="order",
                )
        return value

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["Expected a JSON object."]}, code="invalid")
        return super().to_internal_value(data)


@extend_schema_field(
    {
        "type": "array",
        "minItems": 1,
        "maxItems": settings.INGEST_BATCH_MAX,
        "items": {
            "nullable": True,
            "description": "A post as POST /api/v1/posts takes it. Any JSON value is accepted here: "
            "an item that is not a valid post is reported `invalid` in the 207 body.",
        },
    }
)
class BatchItemsField(serializers.ListField):
    """The batch's items, each validated on its own (api.post_input)."""


class PostBatchInputSerializer(InputSerializer):
    """Only the envelope; each item is validated on its own so bad items never block good ones."""

    posts = BatchItemsField(child=serializers.JSONField(), allow_empty=False)


class WaitQuerySerializer(serializers.Serializer):
    wait_ms = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=1000,
        help_text="Wait up to this long for the inline pre-publish score; 202 when it runs out.",
    )


class ReportInputSerializer(InputSerializer):
    post_external_id = external_id_field()
    reporter_id = external_id_field()
    reason = StrictCharField(max_length=64, trim_whitespace=True)
    details = StrictCharField(required=False, allow_blank=True, default="", max_length=5000)
    created_at = BoundedDateTimeField(
        required=False, not_before=POSTS_SINCE, help_text="From 2000-01-01 to one day after now."
    )


class AuthorInputSerializer(AuthorProfileInputSerializer):
    pass


class ErasureInputSerializer(InputSerializer):
    author_external_id = external_id_field()


class AppealInputSerializer(InputSerializer):
    post_external_id = external_id_field()
    statement = StrictCharField(required=False, allow_blank=True, default="", max_length=5000)


class DomainBlockInputSerializer(InputSerializer):
    domain = StrictCharField(max_length=URL_MAX_CHARS, trim_whitespace=True)
    reason = StrictCharField(max_length=255, trim_whitespace=True)

    def validate_domain(self, value: str) -> str:
        try:
            return block_domain_value(value)
        except BlockRefused as exc:
            raise serializers.ValidationError(exc.message, code=exc.code) from exc


class IpBlockInputSerializer(InputSerializer):
    address = IpAddressField()
    reason = StrictCharField(max_length=255, trim_whitespace=True)


# --- output ---------------------------------------------------------------------------------


@functools.cache
def _prototype_fields(serializer_class: type[serializers.Serializer]) -> list[serializers.Field]:
    # A model serializer builds its fields from the model on every instantiation; built once here.
    return list(serializer_class()._readable_fields)


class SharedFieldsOutputSerializer(serializers.ModelSerializer):
    """Renders with fields built once per class (ModelSerializer builds them from the model on
    every instantiation: ~0.3 ms per serializer, twice on every POST /api/v1/posts). Output only,
    and only for fields that render without state: plain model fields, whose to_representation
    reads nothing but the value, and SerializerMethodFields, called on this instance (its own
    context). The rendering loop is DRF's Serializer.to_representation; `fields` (the schema,
    validation) is DRF's as usual."""

    def to_representation(self, instance: Any) -> dict[str, Any]:
        ret: dict[str, Any] = {}
        for field in _prototype_fields(type(self)):
            name = str(field.field_name)
            if isinstance(field, serializers.SerializerMethodField):
                ret[name] = getattr(self, str(field.method_name))(instance)
                continue
            try:
                attribute = field.get_attribute(instance)
            except SkipField:
                continue
            check_for_none = attribute.pk if isinstance(attribute, PKOnlyObject) else attribute
            ret[name] = None if check_for_none is None else field.to_representation(attribute)
        return ret


class ScoreOutputSerializer(SharedFieldsOutputSerializer):
    class Meta:
        model = Score
        fields = [
            "model_set",
            "revision",
            "final_score",
            "action",
            "text_score",
            "preview_score",
            "link_score",
            "behaviour_score",
            "abuse_score",
            "short_circuit_reason",
            "routing_reason",
            "model_versions",
            "latency_ms",
            "created_at",
        ]


class DecisionOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = Decision
        fields = ["label", "reason_code", "category", "created_at"]


class PostIngestOutputSerializer(SharedFieldsOutputSerializer):
    score = serializers.SerializerMethodField(help_text="The inline score when ?wait_ms produced one, else null.")

    class Meta:
        model = Post
        fields = ["id", "external_id", "language", "status", "final_score", "model_version", "received_at", "score"]

    @extend_schema_field(ScoreOutputSerializer(allow_null=True))
    def get_score(self, post: Post) -> dict[str, Any] | None:
        score = self.context.get("score")
        return ScoreOutputSerializer(score).data if score is not None else None


class CategoryScoresSerializer(serializers.Serializer):
    spam = serializers.FloatField(allow_null=True, help_text="The fused spam score (final_score).")
    abuse = serializers.FloatField(
        allow_null=True, help_text="The abuse model's calibrated score; null when none was served."
    )


class CampaignOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = Campaign
        fields = ["id", "member_count", "author_count", "first_seen_at", "last_seen_at", "decided_label"]


class PostOutputSerializer(serializers.ModelSerializer):
    author_external_id = serializers.CharField(source="author.external_id")
    category_scores = CategoryScoresSerializer(read_only=True, help_text="The latest score per harm category.")
    campaign = CampaignOutputSerializer(
        allow_null=True, read_only=True, help_text="Near-copies of this text in your source; null when none."
    )
    scores = serializers.SerializerMethodField()
    decision = serializers.SerializerMethodField()

    class Meta:
        model = Post
        fields = [
            "id",
            "external_id",
            "author_external_id",
            "url",
            "language",
            "status",
            "status_changed_at",
            "final_score",
            "category_scores",
            "model_version",
            "scored_at",
            "report_count",
            "created_at",
            "received_at",
            "campaign",
            "scores",
            "decision",
        ]

    @extend_schema_field(ScoreOutputSerializer(many=True))
    def get_scores(self, post: Post) -> list[dict[str, Any]]:
        scores = getattr(post, "recent_scores", None)
        if scores is None:
            scores = list(post.scores.order_by("-created_at", "-id"))
        return ScoreOutputSerializer(scores, many=True).data  # type: ignore[return-value]

    @extend_schema_field(DecisionOutputSerializer(allow_null=True))
    def get_decision(self, post: Post) -> dict[str, Any] | None:
        decisions = getattr(post, "active_decisions", None)
        if decisions is None:
            decisions = list(post.decisions.filter(undone_at__isnull=True).order_by("-created_at", "-id")[:1])
        if not decisions:
            return None
        return DecisionOutputSerializer(decisions[0]).data


class PostIngestResultSerializer(serializers.Serializer):
    """One item of a batch response."""

    index = serializers.IntegerField()
    external_id = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=["created", "existing", "conflict", "invalid"])
    id = serializers.IntegerField(allow_null=True)
    content_hash = serializers.CharField(required=False, help_text="With `conflict`: the stored post's content hash.")
    errors = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))  # type: ignore[assignment]
    truncated = serializers.BooleanField(
        required=False, help_text="Present and true when the item had more errors than are listed."
    )


class PostBatchOutputSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    existing = serializers.IntegerField()
    conflict = serializers.IntegerField()
    invalid = serializers.IntegerField()
    results = PostIngestResultSerializer(many=True)


class ReportOutputSerializer(serializers.ModelSerializer):
    post_external_id = serializers.CharField(source="post.external_id")
    post_report_count = serializers.IntegerField(source="post.report_count")

    class Meta:
        model = Report
        fields = [
            "id",
            "post_external_id",
            "reporter_id",
            "reason",
            "category",
            "details",
            "created_at",
            "post_report_count",
        ]
        extra_kwargs = {"category": {"help_text": "The policy category of the reason (POLICY_CATEGORIES)."}}


class AuthorOutputSerializer(serializers.ModelSerializer):
    post_count = serializers.IntegerField(source="platform_post_count")
    spam_post_count = serializers.IntegerField(source="platform_spam_post_count")
    spam_report_count = serializers.IntegerField(source="platform_spam_report_count")
    seen_post_count = serializers.IntegerField(source="post_count")

    class Meta:
        model = Author
        fields = [
            "external_id",
            "username",
            "account_created_at",
            "email_domain",
            "friends_count",
            "followers_count",
            "verified",
            "post_count",
            "spam_post_count",
            "spam_report_count",
            "seen_post_count",
            "updated_at",
        ]


class _SourceBlockOutputSerializer(serializers.ModelSerializer):
    blocked_at = serializers.DateTimeField(source="created_at")

    class Meta:
        model = SourceBlock
        fields: list[str] = []


def _block_output_serializer(class_name: str, *, value_name: str, noun: str) -> type[serializers.ModelSerializer]:
    """The output of one block list: the same row, the value under the list's own name."""
    attrs = {
        value_name: serializers.CharField(source="value"),
        "Meta": type("Meta", (_SourceBlockOutputSerializer.Meta,), {"fields": [value_name, "reason", "blocked_at"]}),
        "__doc__": f"One of the calling source's own {noun} blocks.",
        "__module__": __name__,
    }
    return type(class_name, (_SourceBlockOutputSerializer,), attrs)


DomainBlockOutputSerializer = _block_output_serializer("DomainBlockOutputSerializer", value_name="name", noun="domain")
IpBlockOutputSerializer = _block_output_serializer("IpBlockOutputSerializer", value_name="address", noun="IP")


# --- errors (schema only: the exception handler renders them) ---------------------------------


class ErrorDetailSerializer(serializers.Serializer):
    field = serializers.CharField()
    code = serializers.CharField()
    message = serializers.CharField()


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    fields = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))  # type: ignore[assignment]
    details = ErrorDetailSerializer(many=True, required=False)
    truncated = serializers.BooleanField(
        required=False, help_text="Present and true when more errors were found than are listed."
    )


class ErrorSerializer(serializers.Serializer):
    error = ErrorBodySerializer()


class ConflictErrorBodySerializer(ErrorBodySerializer):
    id = serializers.IntegerField(help_text="The stored post's id.")
    content_hash = serializers.CharField(
        help_text="SHA-256 (hex) of the stored post's content; empty for a post stored before hashes."
    )


class ConflictErrorSerializer(serializers.Serializer):
    error = ConflictErrorBodySerializer()


class AppealOutputSerializer(serializers.ModelSerializer):
    post_external_id = serializers.CharField(source="post.external_id")
    status = serializers.ChoiceField(
        choices=["pending", "upheld", "overturned"], help_text="pending until a moderator reviews it."
    )
    appealed_status = serializers.CharField(help_text="The post's status when the appeal arrived.")

    class Meta:
        model = Appeal
        fields = ["id", "post_external_id", "appealed_status", "statement", "status", "created_at", "resolved_at"]


class AuthorErasedSerializer(serializers.ModelSerializer):
    erased_post_count = serializers.IntegerField(source="post_count", help_text="Posts now tombstones.")

    class Meta:
        model = Author
        fields = ["erased_at", "erased_post_count"]
