"""POST/GET posts: auth, idempotency, isolation between sources, batches, inline-score hook."""

from __future__ import annotations

import json
from unittest import mock

import pytest
from kombu.exceptions import OperationalError
from rest_framework.test import APIClient

from moderation.models import Post
from moderation.services.api_keys import api_key_revoke
from moderation.services.ingest import post_ingest
from scoring import api as scoring_api
from scoring.models import Action
from tests.factories import DecisionFactory, ScoreFactory, api_key_with_row
from tests.moderation.api_helpers import ApiCaller, post_payload

pytest_plugins = ["tests.moderation.api_fixtures"]

pytestmark = pytest.mark.django_db


def test_create_then_repeat_returns_existing(api: ApiCaller):
    payload = post_payload()
    first = api.post("/api/v1/posts", payload)
    assert first.status_code == 201, first.json()
    # Counters and the author's profile are not content: a retry may re-measure them.
    again = api.post("/api/v1/posts", {**payload, "share_count": 99, "author": {**payload["author"], "verified": True}})
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert Post.objects.count() == 1
    assert Post.objects.get().share_count == 1


def test_stores_the_whole_payload(api: ApiCaller):
    api.post("/api/v1/posts", post_payload())
    post = Post.objects.select_related("author", "link__domain", "ip").get()
    assert post.url == "https://promo.example.co.uk/win?ref=42"
    assert post.link is not None and post.link.domain.name == "example.co.uk"
    assert post.ip is not None and post.ip.address == "203.0.113.9"
    assert [s["step"] for s in post.journey] == ["open_composer", "paste", "submit"]
    assert (post.share_count, post.comment_count) == (1, 2)
    assert post.preview_text == "Enter your card number"
    author = post.author
    assert author.email_domain == "mailinator.com"
    assert (author.platform_post_count, author.platform_spam_post_count, author.platform_spam_report_count) == (
        40,
        2,
        5,
    )


def test_minimal_payload(api: ApiCaller):
    response = api.post(
        "/api/v1/posts", {"external_id": 42, "author": {"external_id": "u"}, "created_at": "2026-01-01T00:00:00Z"}
    )
    assert response.status_code == 201, response.json()
    post = Post.objects.get()
    assert (post.external_id, post.url, post.link, post.ip, post.journey) == ("42", "", None, None, [])


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"HTTP_AUTHORIZATION": "Api-Key wrong"},
        {"HTTP_X_API_KEY": "wrong"},
        {"HTTP_AUTHORIZATION": "Bearer something"},
    ],
)
def test_requires_a_valid_key(db, clean_throttle, headers):
    client = APIClient()
    response = client.post("/api/v1/posts", post_payload(), format="json", **headers)
    assert response.status_code == 401
    assert response.json()["error"]["code"] in {"not_authenticated", "authentication_failed"}
    assert response.headers["WWW-Authenticate"] == "Api-Key"
    assert not Post.objects.exists()


def test_x_api_key_header_works(db, clean_throttle):
    _, raw = api_key_with_row()
    response = APIClient().post("/api/v1/posts", post_payload(), format="json", HTTP_X_API_KEY=raw)
    assert response.status_code == 201


def test_revoked_key_is_rejected(db, clean_throttle):
    key, raw = api_key_with_row()
    api = ApiCaller(key.source, raw)
    assert api.post("/api/v1/posts", post_payload("a")).status_code == 201
    api_key_revoke(api_key=key)
    response = api.post("/api/v1/posts", post_payload("b"))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


def test_inactive_source_is_rejected(api: ApiCaller):
    api.source.is_active = False
    api.source.save()
    assert api.post("/api/v1/posts", post_payload()).status_code == 401


def test_get_post_with_scores_and_decision(api: ApiCaller):
    post, _ = post_ingest(source=api.source, payload=_validated(post_payload("p-9")))
    ScoreFactory(post=post, final_score=0.2, revision=0)
    ScoreFactory(post=post, final_score=0.95, revision=1, action=Action.REMOVE)
    DecisionFactory(post=post, label="spam", reason_code="phishing")
    response = api.get("/api/v1/posts/p-9")
    assert response.status_code == 200
    body = response.json()
    assert body["external_id"] == "p-9" and body["status"] == "received"
    assert [s["final_score"] for s in body["scores"]] == [0.95, 0.2]
    assert {"text_score", "link_score", "behaviour_score", "preview_score", "model_versions"} <= set(body["scores"][0])
    assert body["decision"]["label"] == "spam" and body["decision"]["reason_code"] == "phishing"


def test_get_post_is_scoped_to_the_callers_source(api: ApiCaller, other_api: ApiCaller):
    api.post("/api/v1/posts", post_payload("mine"))
    response = other_api.get("/api/v1/posts/mine")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "post_not_found"
    # The same external_id in another source is a different post.
    assert other_api.post("/api/v1/posts", post_payload("mine")).status_code == 201
    assert Post.objects.filter(external_id="mine").count() == 2


def test_get_post_named_batch(api: ApiCaller, other_api: ApiCaller):
    api.post("/api/v1/posts", post_payload("batch"))
    response = api.get("/api/v1/posts/batch")
    assert response.status_code == 200 and response.json()["external_id"] == "batch"
    assert other_api.get("/api/v1/posts/batch").status_code == 404


def test_get_unknown_and_hostile_ids(api: ApiCaller):
    assert api.get("/api/v1/posts/nope").status_code == 404
    assert api.get("/api/v1/posts/a%00b").status_code == 404
    assert api.get("/api/v1/posts/" + "x" * 300).status_code == 404


def test_query_counts(api: ApiCaller, django_assert_max_num_queries):
    api.post("/api/v1/posts", post_payload("warm"))  # key last_used_at touched, author/link/ip exist
    with django_assert_max_num_queries(12):
        assert api.post("/api/v1/posts", post_payload("p-2")).status_code == 201
    with django_assert_max_num_queries(1):
        assert api.post("/api/v1/posts", post_payload("p-2")).status_code == 200
    post = Post.objects.get(external_id="p-2")
    for revision in range(5):
        ScoreFactory(post=post, revision=revision)
        DecisionFactory(post=post)
    with django_assert_max_num_queries(4):
        assert api.get("/api/v1/posts/p-2").status_code == 200


def test_broker_outage_still_returns_201(api: ApiCaller, django_capture_on_commit_callbacks):
    outage = mock.patch("scoring.tasks.score_batch.delay", side_effect=OperationalError("connection refused"))
    with outage as delay, django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/v1/posts", post_payload())
    assert response.status_code == 201
    delay.assert_called_once()
    assert Post.objects.get().status == "received"


@pytest.fixture
def dead_broker():
    """Point the Celery app at a port nothing listens on, for real."""
    from config.celery_app import app

    old = app.conf.broker_url, app.conf.broker_write_url
    app.conf.broker_url = app.conf.broker_write_url = "redis://127.0.0.1:1/0"
    app._pool = None
    app.amqp._producer_pool = None
    yield app
    app.conf.broker_url, app.conf.broker_write_url = old
    app._pool = None
    app.amqp._producer_pool = None


def test_unreachable_broker_still_returns_201(api: ApiCaller, dead_broker, django_capture_on_commit_callbacks, caplog):
    import time

    started = time.monotonic()
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/v1/posts", post_payload())
    elapsed = time.monotonic() - started
    assert response.status_code == 201
    assert Post.objects.filter(external_id="p-1", status="received").exists()
    assert "scoring.score_enqueue_failed" in caplog.text
    assert elapsed < 10, f"a dead broker held the request for {elapsed:.1f}s"


def test_wait_ms_without_a_model_server_answers_202(api: ApiCaller):
    """No Triton in this test (its settings point at the session's closed port,
    tests/conftest.py no_model_server): the real inline scorer gives up within the budget."""
    response = api.post("/api/v1/posts?wait_ms=50", post_payload())
    assert response.status_code == 202
    assert response.json()["status"] == "received" and response.json()["score"] is None
    assert Post.objects.count() == 1


@pytest.mark.parametrize("value", ["-1", "1001", "abc", "1.5"])
def test_wait_ms_is_validated(api: ApiCaller, value: str):
    response = api.post(f"/api/v1/posts?wait_ms={value}", post_payload())
    assert response.status_code == 400
    assert "wait_ms" in response.json()["error"]["fields"]
    assert not Post.objects.exists()


def test_wait_ms_uses_the_pipelines_inline_scorer(api: ApiCaller, monkeypatch):
    calls = []

    def score_inline(*, post, budget_ms, held):
        calls.append((budget_ms, held))
        score = ScoreFactory(post=post, final_score=0.97, action=Action.REMOVE)
        Post.objects.filter(pk=post.pk).update(status="auto_removed", final_score=0.97)
        post.refresh_from_db()
        return score

    monkeypatch.setattr(scoring_api, "score_inline", score_inline)
    response = api.post("/api/v1/posts?wait_ms=300", post_payload())
    assert response.status_code == 201
    body = response.json()
    assert calls == [(300, True)]
    assert body["status"] == "auto_removed" and body["score"]["action"] == "remove"


def test_wait_ms_timeout_and_scorer_failure_answer_202(api: ApiCaller, monkeypatch):
    monkeypatch.setattr(scoring_api, "score_inline", lambda *, post, budget_ms, held: None)
    assert api.post("/api/v1/posts?wait_ms=1", post_payload("a")).status_code == 202

    def boom(*, post, budget_ms, held):
        raise RuntimeError("triton down")

    monkeypatch.setattr(scoring_api, "score_inline", boom)
    assert api.post("/api/v1/posts?wait_ms=1", post_payload("b")).status_code == 202


# --- batch ------------------------------------------------------------------------------------


def test_batch_reports_per_item_results(api: ApiCaller):
    api.post("/api/v1/posts", post_payload("old"))
    items = [
        post_payload("b-1"),
        post_payload("b-2", url="javascript:alert(1)"),
        post_payload("old"),
        "not an object",
        post_payload("b-1"),
        post_payload("b-3", text="\ud800"),
    ]
    # json.dumps escapes the lone surrogate as \\ud800, as a client's encoder would.
    response = api.raw("/api/v1/posts/batch", json.dumps({"posts": items}, default=str).encode())
    assert response.status_code == 207
    body = response.json()
    assert (body["created"], body["existing"], body["invalid"]) == (1, 2, 3)
    statuses = [(r["index"], r["external_id"], r["status"]) for r in body["results"]]
    assert statuses == [
        (0, "b-1", "created"),
        (1, "b-2", "invalid"),
        (2, "old", "existing"),
        (3, None, "invalid"),
        (4, "b-1", "existing"),
        (5, "b-3", "invalid"),
    ]
    assert body["results"][1]["errors"] == {"url": ["The URL scheme must be http or https."]}
    assert "text" in body["results"][5]["errors"]
    assert body["results"][0]["id"] == body["results"][4]["id"]
    assert Post.objects.filter(source=api.source).count() == 2


def test_batch_over_the_limit_is_413(api: ApiCaller, settings):
    settings.INGEST_BATCH_MAX = 3
    response = api.post("/api/v1/posts/batch", {"posts": [post_payload(f"x{i}") for i in range(4)]})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "batch_too_large"
    assert not Post.objects.exists()


def test_batch_at_the_limit_is_accepted(api: ApiCaller, settings):
    settings.INGEST_BATCH_MAX = 3
    response = api.post("/api/v1/posts/batch", {"posts": [post_payload(f"x{i}") for i in range(3)]})
    assert response.status_code == 207 and response.json()["created"] == 3


@pytest.mark.parametrize("body", [{}, {"posts": []}, {"posts": "x"}, [], {"items": [1]}])
def test_batch_envelope_errors(api: ApiCaller, body):
    response = api.post("/api/v1/posts/batch", body)
    assert response.status_code == 400
    assert response.json()["error"]["fields"]


def test_batch_query_count_is_small(api: ApiCaller, django_assert_max_num_queries):
    api.post("/api/v1/posts", post_payload("warm"))
    with django_assert_max_num_queries(14):  # constant in N: tests/moderation/test_ingest_cost.py
        response = api.post("/api/v1/posts/batch", {"posts": [post_payload(f"q{i}") for i in range(50)]})
    assert response.json()["created"] == 50


def _validated(payload: dict) -> dict:
    from api.serializers import PostInputSerializer

    serializer = PostInputSerializer(data=payload)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
