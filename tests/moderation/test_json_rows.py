"""Rows sent as one JSON parameter (core.json_rows) store exactly what the ORM
stores, in the order sent, and fall back to bulk_create for what JSON cannot carry."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
from django.db import connection, models
from django.test.utils import CaptureQueriesContext

from core.json_rows import insert_rows, rows_json
from moderation.models import Post
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
    field = models.JSONField(encoder=type("Enc", (), {}))
    field.set_attributes_from_name("payload")
    with pytest.raises(TypeError, match="encoder"):
        rows_json([], [field])


def test_json_rows_text_is_the_standard_encoders():
    """rows_json's fast encoder writes what json.dumps writes (as JSON values), and refuses a
    non-finite number nested in a JSON column as the standard encoder does."""
    import json

    from core.json_rows import column_fields, rows_json

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


def _reference(rows: Sequence[models.Model], fields: list[models.Field], add: bool = True) -> list[dict]:
    """What rows_json sent before its per-field shortcut: every field's pre_save and
    get_prep_value, for every row."""
    return [{f.column: f.get_prep_value(f.pre_save(row, add)) for f in fields} for row in rows]


def _as_json_values(payload: list[dict]) -> list[dict]:
    import json

    import orjson

    from core.json_rows import _default

    return json.loads(orjson.dumps(payload, default=_default, option=orjson.OPT_NON_STR_KEYS))


def test_the_per_field_shortcut_sends_what_the_fields_would(monkeypatch) -> None:
    """Values already of their field's stored type are taken as they are; everything else (a
    number in a text field, a numeric string in an integer field, a lazy string, a naive or
    non-UTC timestamp, an auto_now field, an IP address, JSON) still goes through the field."""
    import json
    import warnings
    from datetime import timedelta, timezone

    from django.utils.functional import lazy

    from core.json_rows import column_fields, rows_json
    from moderation.models import Author, IpAddress

    fixed = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    monkeypatch.setattr("django.utils.timezone.now", lambda: fixed)
    author = AuthorFactory()
    lazy_text = lazy(lambda: "lazy text", str)()
    plus2 = timezone(timedelta(hours=2))
    posts = [
        Post(source=author.source, author=author, external_id="a", text="t", created_at=fixed, journey=[]),
        Post(
            source_id=author.source_id,
            author_id=author.pk,
            external_id=12345,  # an int in a CharField: the field makes it "12345"
            text=lazy_text,
            share_count="7",  # a numeric string in an integer field: the field makes it 7
            comment_count=True,  # a bool is not an int here: the field makes it 1
            created_at=datetime(2026, 11, 21, 10, 0, tzinfo=plus2),
            final_score=0.25,
            journey=[{"step": "submit", "at": "2026-11-21T10:00:05Z"}],
        ),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # Django's warning for the naive value below
        posts.append(Post(source=author.source, author=author, external_id="n", created_at=datetime(2026, 1, 1)))  # noqa: DTZ001
        fields = column_fields(Post)
        assert _as_json_values(json.loads(rows_json(posts, fields))) == _as_json_values(_reference(posts, fields))

    authors = [Author(source=author.source, external_id="x", username="u", friends_count=3, verified=True)]
    fields = column_fields(Author)
    sent = json.loads(rows_json(authors, fields))
    assert sent == _as_json_values(_reference(authors, fields))
    assert sent[0]["updated_at"] is not None  # auto_now: pre_save ran
    ips = [IpAddress(address="2001:0db8:0000:0000:0000:0000:0000:0001"), IpAddress(address="192.0.2.1")]
    fields = column_fields(IpAddress)
    sent = json.loads(rows_json(ips, fields))
    assert sent == _as_json_values(_reference(ips, fields))
    assert sent[0]["address"] == "2001:db8::1"  # the field's own clean-up


def test_plain_types_are_only_those_the_field_would_return_unchanged() -> None:
    from core.json_rows import _plain_type
    from moderation.models import Author, IpAddress

    def plain(model: type[models.Model], name: str) -> type | None:
        field = model._meta.get_field(name)
        assert isinstance(field, models.Field)
        return _plain_type(field)

    assert plain(Post, "text") is str
    assert plain(Post, "share_count") is int
    assert plain(Post, "final_score") is float
    assert plain(Post, "created_at") is datetime
    assert plain(Post, "author") is int  # the target's pk
    assert plain(Author, "verified") is bool
    assert plain(Author, "updated_at") is None  # auto_now: pre_save sets it
    assert plain(Post, "journey") is None  # JSON
    assert plain(IpAddress, "address") is None  # IPv6 clean-up
