"""A resent external_id: the same content answers the stored post, other content a 409 with the
stored post's id and content hash (one post or per batch item); nothing is changed either way."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from moderation.models import Post
from moderation.services.content_hash import post_content_hash
from tests.moderation.api_helpers import CREATED_AT, ApiCaller, post_payload

pytest_plugins = ["tests.moderation.api_fixtures"]
pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "change",
    [
        {"text": "other text"},
        {"url": "https://other.example.com/"},
        {"preview": {"title": "Other title"}},
        {"preview": None},
        {"author": {"external_id": "u-2"}},
        {"created_at": (CREATED_AT - timedelta(seconds=1)).isoformat()},
    ],
    ids=["text", "url", "preview title", "preview dropped", "author", "created_at"],
)
def test_a_resend_with_other_content_is_a_409_naming_the_stored_post(api: ApiCaller, change: dict[str, Any]) -> None:
    first = api.post("/api/v1/posts", post_payload())
    assert first.status_code == 201
    stored = Post.objects.get()
    response = api.post("/api/v1/posts", {**post_payload(), **change})
    assert response.status_code == 409, response.content
    error = response.json()["error"]
    assert error["code"] == "idempotency_conflict"
    assert error["id"] == stored.pk
    assert error["content_hash"] == stored.content_hash != ""
    assert Post.objects.get().text == stored.text


def test_an_identical_resend_answers_200_and_the_same_instant_in_another_offset_is_identical(
    api: ApiCaller,
) -> None:
    assert api.post("/api/v1/posts", post_payload()).status_code == 201
    same_instant = CREATED_AT.astimezone(ZoneInfo("Asia/Kolkata")).isoformat()
    again = api.post("/api/v1/posts", post_payload(created_at=same_instant, share_count=50))
    assert again.status_code == 200, again.content


def test_the_hash_is_deterministic_and_stored() -> None:
    from api.serializers import PostInputSerializer

    serializer = PostInputSerializer(data=post_payload())
    assert serializer.is_valid(), serializer.errors
    digest = post_content_hash(payload=serializer.validated_data)
    assert digest == post_content_hash(payload=dict(serializer.validated_data))
    assert len(digest) == 64


def test_a_post_stored_without_a_hash_never_conflicts(api: ApiCaller) -> None:
    assert api.post("/api/v1/posts", post_payload()).status_code == 201
    Post.objects.update(content_hash="")
    assert api.post("/api/v1/posts", post_payload(text="changed")).status_code == 200


def test_a_batch_reports_a_conflict_per_item(api: ApiCaller) -> None:
    assert api.post("/api/v1/posts", post_payload("p-1")).status_code == 201
    stored = Post.objects.get()
    items = [
        post_payload("p-1", text="changed"),
        post_payload("p-1"),
        post_payload("p-2"),
        post_payload("p-2", text="x"),
    ]
    response = api.post("/api/v1/posts/batch", {"posts": items})
    assert response.status_code == 207
    body = response.json()
    assert [r["status"] for r in body["results"]] == ["conflict", "existing", "created", "conflict"]
    assert (body["created"], body["existing"], body["conflict"], body["invalid"]) == (1, 1, 2, 0)
    first = body["results"][0]
    assert first["id"] == stored.pk and first["content_hash"] == stored.content_hash
    assert "external_id" in first["errors"]
    assert Post.objects.get(external_id="p-2").text == items[2]["text"]


def test_an_iso_text_and_a_datetime_of_the_same_instant_hash_alike() -> None:
    from datetime import UTC, datetime

    base = {"external_id": "p", "author": {"external_id": "u"}, "text": "t"}
    text = post_content_hash(payload={**base, "created_at": "2026-11-21T10:00:03Z"})
    aware = post_content_hash(payload={**base, "created_at": datetime(2026, 11, 21, 10, 0, 3, tzinfo=UTC)})
    assert text == aware
