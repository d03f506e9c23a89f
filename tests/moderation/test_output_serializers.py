"""Output serializers that render with fields built once per class (SharedFieldsOutputSerializer)
give exactly what DRF's own rendering gives, and each instance renders with its own context."""

from __future__ import annotations

import pytest
from rest_framework import serializers

from api.serializers import PostIngestOutputSerializer, PostOutputSerializer, ScoreOutputSerializer
from moderation.models import PostStatus
from tests.factories import PostFactory, ScoreFactory

pytestmark = pytest.mark.django_db


def _drf(serializer: serializers.Serializer, instance: object) -> dict:
    """DRF's own rendering of `instance` (the fields this serializer instance builds)."""
    return serializers.Serializer.to_representation(serializer, instance)


def test_ingest_output_renders_as_drf_does_with_and_without_a_score():
    score = ScoreFactory(preview_score=None, short_circuit_reason="", latency_ms=12.5)
    post = score.post
    post.status, post.final_score, post.model_version = PostStatus.QUEUED, 0.5, score.model_set
    for context in ({"score": score}, {"score": None}, {}):
        serializer = PostIngestOutputSerializer(post, context=context)
        assert serializer.data == _drf(PostIngestOutputSerializer(post, context=context), post)
    rendered = PostIngestOutputSerializer(post, context={"score": score}).data
    assert rendered["score"] == _drf(ScoreOutputSerializer(score), score)
    assert rendered["score"]["preview_score"] is None and rendered["received_at"].endswith("Z")


def test_each_instance_renders_its_own_context():
    first, second = ScoreFactory(final_score=0.1), ScoreFactory(final_score=0.9)
    a = PostIngestOutputSerializer(first.post, context={"score": first})
    b = PostIngestOutputSerializer(second.post, context={"score": second})
    assert (b.data["score"]["final_score"], a.data["score"]["final_score"]) == (0.9, 0.1)
    assert PostIngestOutputSerializer(PostFactory(), context={"score": None}).data["score"] is None


def test_nested_many_scores_render_as_drf_does():
    score = ScoreFactory()
    post = score.post
    post.recent_scores = [score]  # type: ignore[attr-defined]  # the selector's Prefetch(to_attr=...) attribute
    rendered = PostOutputSerializer(post).data["scores"]
    assert rendered == [_drf(ScoreOutputSerializer(score), score)]
