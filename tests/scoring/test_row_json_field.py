"""Score rows are bulk-inserted with one placeholder per row, not Django's UNNEST arrays.

psycopg escapes an array of JSON strings element by element in Python (client-side binding),
which made that escaping a quarter of the scoring worker's time; RowJSONField opts out."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from moderation.models import Post
from scoring.models import Action, Score
from tests.factories import PostFactory

pytestmark = pytest.mark.django_db

CONTRIBUTIONS = {"link": {"has_shortener": 0.75, 'quote"d': -0.5}, "fusion": {"text_prob": 2.25, "bias": -1.0}}


def _scores(posts: list[Post]) -> list[Score]:
    return [
        Score(
            post=post,
            model_set="text:1,link:1",
            final_score=0.5,
            action=Action.QUEUE,
            features={"url_length": 42, "text": 'it\'s \\ "quoted"'},
            contributions=CONTRIBUTIONS,
            model_versions={"text_classifier": "1"},
        )
        for post in posts
    ]


def test_bulk_insert_of_scores_uses_a_placeholder_per_row_and_keeps_the_values() -> None:
    posts = PostFactory.create_batch(3)
    with CaptureQueriesContext(connection) as ctx:
        Score.objects.bulk_create(_scores(posts))
    inserts = [q["sql"] for q in ctx.captured_queries if q["sql"].startswith('INSERT INTO "scoring_score"')]
    assert len(inserts) == 1
    assert "UNNEST" not in inserts[0]
    stored = list(Score.objects.filter(post__in=posts).values_list("features", "contributions", "model_versions"))
    assert stored == [({"url_length": 42, "text": 'it\'s \\ "quoted"'}, CONTRIBUTIONS, {"text_classifier": "1"})] * 3


def test_posts_without_json_columns_of_this_kind_still_use_unnest() -> None:
    """The opt-out is per field: a model with only plain columns keeps Django's UNNEST insert,
    which shows the assertion above is about RowJSONField and not about the backend."""
    from moderation.models import Domain

    with CaptureQueriesContext(connection) as ctx:
        Domain.objects.bulk_create([Domain(name="a.example"), Domain(name="b.example")])
    (insert,) = [q["sql"] for q in ctx.captured_queries if q["sql"].startswith('INSERT INTO "moderation_domain"')]
    assert "UNNEST" in insert


def test_score_json_is_compressed_with_lz4_on_postgresql():
    """Migration 0006: a Score's JSON columns are compressed with lz4, not pglz (where the
    server has lz4; this machine's PostgreSQL does), and a large value really is compressed.
    Migration 0007's type change resets a column's compression; it sets lz4 again."""
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attname, attcompression FROM pg_attribute WHERE attrelid = 'scoring_score'::regclass "
            "AND attname IN ('features', 'contributions', 'model_versions') ORDER BY attname"
        )
        assert cursor.fetchall() == [("contributions", "l"), ("features", "l"), ("model_versions", "")]
    (post,) = PostFactory.create_batch(1)
    score = _scores([post])[0]
    score.contributions = {f"model{m}": {f"feature_{i}": i / 7 for i in range(40)} for m in range(4)}
    score.save()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_column_compression(contributions) FROM scoring_score WHERE id = %s", [score.pk])
        assert cursor.fetchone() == ("lz4",)


def test_score_json_columns_are_json_not_jsonb_on_postgresql() -> None:
    """Migration 0007 / StoredJSONField: the text as written, no jsonb parse on insert."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attname, atttypid::regtype::text FROM pg_attribute WHERE attrelid = 'scoring_score'::regclass "
            "AND attname IN ('features', 'contributions', 'model_versions') ORDER BY attname"
        )
        assert cursor.fetchall() == [("contributions", "json"), ("features", "json"), ("model_versions", "json")]


def test_json_columns_read_back_the_same_values_on_every_path() -> None:
    """The worker's insert (json_to_recordset), a model save, a queryset and .values() all give
    the written values back; JSON top-level strings that look like numbers stay strings, which
    needs json to come from psycopg as text, decoded once by the field (moderation.receivers)."""
    from core.json_rows import insert_rows

    posts = PostFactory.create_batch(2)
    worker_row, saved_row = _scores(posts)
    insert_rows([worker_row])
    saved_row.features = "123"  # a JSON string, not a number
    saved_row.model_versions = {"nested": [1, 2.5, None, True, "x"]}
    saved_row.save()
    by_post = {s.post_id: s for s in Score.objects.filter(post__in=posts)}
    assert by_post[posts[0].pk].contributions == CONTRIBUTIONS
    assert by_post[posts[0].pk].features == {"url_length": 42, "text": 'it\'s \\ "quoted"'}
    assert by_post[posts[1].pk].features == "123"
    assert by_post[posts[1].pk].model_versions == {"nested": [1, 2.5, None, True, "x"]}
    values = dict(Score.objects.filter(post__in=posts).values_list("post_id", "features"))
    assert values[posts[1].pk] == "123"
    with connection.cursor() as cursor:  # raw SQL sees text, as it does for jsonb
        cursor.execute("SELECT features, '{}'::jsonb FROM scoring_score WHERE post_id = %s", [posts[1].pk])
        assert cursor.fetchone() == ('"123"', "{}")


def test_queryset_lookups_on_json_columns_still_work() -> None:
    """json has no @>, ? or =; StoredJSONField's lookups and key transforms cast to jsonb."""
    posts = PostFactory.create_batch(2)
    first, second = _scores(posts)
    second.features = {"url_length": 7, "link": {"host": "spam.example"}}
    second.contributions = {"fusion": {"bias": -3.5}}
    Score.objects.bulk_create([first, second])
    mine = Score.objects.filter(post__in=posts)
    assert list(mine.filter(features__contains={"url_length": 42}).values_list("post_id", flat=True)) == [posts[0].pk]
    assert list(mine.filter(features__has_key="link").values_list("post_id", flat=True)) == [posts[1].pk]
    assert mine.filter(features__has_keys=["url_length", "text"]).count() == 1
    assert mine.filter(features__url_length=7).get().post_id == posts[1].pk
    assert mine.filter(features__link__host="spam.example").get().post_id == posts[1].pk
    assert mine.filter(features__link__host__icontains="SPAM").count() == 1
    assert mine.filter(contributions__fusion__bias__lt=-2).get().post_id == posts[1].pk
    assert mine.filter(contributions__fusion__text_prob__gt=2).get().post_id == posts[0].pk
    assert mine.filter(model_versions={"text_classifier": "1"}).count() == 2
    assert mine.filter(features__contained_by={"url_length": 7, "link": {"host": "spam.example"}, "x": 1}).count() == 1
    assert mine.filter(features__isnull=False).count() == 2
