"""Rows sent as one JSON parameter (moderation.services.json_rows) store exactly what the ORM
stores, in the order sent, and fall back to bulk_create for what JSON cannot carry."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest
from django.db import connection, models
from django.test.utils import CaptureQueriesContext

from moderation.models import Post
from moderation.services.json_rows import insert_rows, rows_json
from scoring.models import Action, Score
from tests.factories import AuthorFactory, PostFactory

pytestmark = pytest.mark.django_db


def test_insert_rows_stores_what_the_orm_stores_in_order() -> None:
    author = AuthorFactory()
    created = datetime(2026, 11, 21, 10, 0, 5, 123456, tzinfo=UTC)
    texts = ["plain", "quote ' and \" and \\ backslash", "é 漢字 🙂", "%s %(x)s {}", ""]
    posts = [
        Post(
            source=author.source,
            author=author,
            external_id=f"jr-{i}",
            text=text,
            journey=[{"step": "submit", "at": "2026-11-21T10:00:05Z", "n": i}],
            created_at=created,
        )
        for i, text in enumerate(texts)
    ]
    with CaptureQueriesContext(connection) as ctx:
        insert_rows(posts)
    assert len(ctx.captured_queries) == 1
    assert [p.pk for p in posts] == sorted(p.pk for p in posts)  # pks handed back in row order
    for post, text in zip(posts, texts, strict=True):
        stored = Post.objects.get(pk=post.pk)
        assert not post._state.adding
        assert (stored.external_id, stored.text, stored.created_at) == (post.external_id, text, created)
        assert stored.journey == post.journey


def test_nan_score_falls_back_to_bulk_create() -> None:
    post = PostFactory()
    score = Score(post=post, model_set="m", final_score=math.nan, action=Action.QUEUE)
    insert_rows([score])
    assert score.pk is not None
    assert math.isnan(Score.objects.get(pk=score.pk).final_score)


def test_json_field_with_its_own_encoder_is_refused() -> None:
    field = models.JSONField(encoder=type("Enc", (), {}))  # type: ignore[arg-type]
    field.set_attributes_from_name("payload")
    with pytest.raises(TypeError, match="encoder"):
        rows_json([], [field])


def test_json_rows_text_is_the_standard_encoders():
    """rows_json's fast encoder writes what json.dumps writes (as JSON values), and refuses a
    non-finite number nested in a JSON column as the standard encoder does."""
    import json

    from moderation.services.json_rows import column_fields, rows_json

    post = PostFactory()
    fields = column_fields(Score)
    contributions = {"link_model": {"url_length": -0.025088871, "bias": -2.0380473136901855}, "fusion": {"x": 1e-05}}
    score = Score(
        post=post,
        model_set="m",
        final_score=0.5,
        action=Action.QUEUE,
        features={"link": {"a": 0.1, "b": 3}, "model_ms": 12.5, "note": 'quo"te \\ é'},
        contributions=contributions,
        model_versions={"text_classifier": "1"},
    )
    fast = rows_json([score], fields)
    payload = [{f.column: f.get_prep_value(f.pre_save(score, True)) for f in fields}]
    standard = json.dumps(payload, default=lambda v: v.isoformat(), ensure_ascii=False, allow_nan=False)
    assert json.loads(fast) == json.loads(standard)
    score.contributions = {"link_model": {"bias": math.nan}}
    with pytest.raises(ValueError):
        rows_json([score], fields)
    score.contributions = {"link_model": [1.0, [math.inf]]}
    with pytest.raises(ValueError):
        rows_json([score], fields)
