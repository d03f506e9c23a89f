"""The scoring pipeline against real services: API ingest in this process, a real Celery
worker subprocess on the real Redis broker and PostgreSQL test database, a real Triton."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.db.models import Count
from rest_framework.test import APIClient

from modelops import triton_server as server_control
from moderation.models import Post, PostStatus
from scoring.models import Action, Score, WebhookDelivery
from scoring.services.policy import policy_active, policy_decide
from scoring.services.webhooks import SIGNATURE_HEADER, verify_signature
from tests.factories import SourceFactory, create_api_key
from tests.integration.conftest import Api, set_policy, wait_until
from tests.scoring.webhook_receiver import start_receiver

pytestmark = pytest.mark.integration

SCORED_TIMEOUT = 60.0


def payload(n: int, **extra: Any) -> dict[str, Any]:
    body = {
        "external_id": f"it-{n}-{time.monotonic_ns()}",
        "text": extra.pop("text", f"Win a free phone number {n}, click now!"),
        "url": extra.pop("url", f"https://promo{n % 3}.example.com/win?ref={n}"),
        "author": {"external_id": f"u-{n % 4}", "account_created_at": "2026-11-01T08:00:00Z"},
        "ip": f"198.51.100.{n % 250 + 1}",
        "journey": [
            {"step": "open_composer", "at": "2026-11-21T10:00:00Z"},
            {"step": "submit", "at": "2026-11-21T10:00:03Z"},
        ],
        "created_at": "2026-11-21T10:00:03Z",
    }
    body.update(extra)
    return body


def ingest(api: Api, count: int, **extra: Any) -> list[int]:
    ids = []
    for n in range(count):
        response = api.post("posts", payload(n, **extra))
        assert response.status_code == 201, response.content
        ids.append(response.json()["id"])
    return ids


def all_scored(ids: list[int]) -> bool:
    return not Post.objects.filter(id__in=ids, status=PostStatus.RECEIVED).exists()


def assert_scored_exactly_once(ids: list[int]) -> None:
    counts = dict(Score.objects.filter(post_id__in=ids).values_list("post_id").annotate(n=Count("id")))
    assert counts == dict.fromkeys(ids, 1), counts


def pipeline_inferences(triton_server: Any) -> int:
    stats = triton_server.client().statistics("spam_pipeline")
    return sum(int(s.get("inference_stats", {}).get("success", {}).get("count", 0)) for s in stats)


def test_ingest_to_scored_end_to_end(api, worker):
    ids = ingest(api, 8)
    wait_until(lambda: all_scored(ids), timeout=SCORED_TIMEOUT, message=f"8 posts scored\n{worker.log_tail()}")
    assert_scored_exactly_once(ids)
    policy = policy_active()
    for post in Post.objects.filter(id__in=ids):
        score = post.scores.get()
        assert "fusion_model:" in score.model_set and "text_classifier:" in score.model_set
        assert score.model_versions["fusion_model"] == "1"
        assert set(score.contributions) >= {"link_model", "behaviour_model", "fusion_model"}
        assert 0.0 <= score.final_score <= 1.0 and score.text_score is not None
        assert score.latency_ms > 0
        assert post.final_score == score.final_score and post.scored_at is not None
        expected = policy_decide(
            policy=policy,
            final_score=score.final_score,
            report_count=0,
            sub_scores=(score.text_score, score.preview_score, score.link_score, score.behaviour_score),
        )
        assert score.action == expected
        assert (
            post.status
            == {
                Action.REMOVE: PostStatus.AUTO_REMOVED,
                Action.QUEUE: PostStatus.QUEUED,
                Action.APPROVE: PostStatus.AUTO_APPROVED,
            }[expected]
        )


@pytest.mark.parametrize(
    ("remove", "approve", "status"),
    [
        (0.0, 0.0, PostStatus.AUTO_REMOVED),  # everything is >= 0
        (1.0, 1.0, PostStatus.AUTO_APPROVED),  # every probability is < 1
        (1.0, 0.0, PostStatus.QUEUED),  # nothing reaches either threshold
    ],
)
def test_threshold_outcomes(api, worker, remove, approve, status):
    set_policy(remove=remove, approve=approve)
    ids = ingest(api, 3)
    wait_until(lambda: all_scored(ids), timeout=SCORED_TIMEOUT, message=f"scored\n{worker.log_tail()}")
    assert set(Post.objects.filter(id__in=ids).values_list("status", flat=True)) == {status}
    assert set(Score.objects.filter(post_id__in=ids).values_list("policy__version", flat=True)) == {
        policy_active().version
    }


def test_blocked_domain_short_circuits_without_a_model_call(api, worker, triton_server):
    response = api.post("blocklist/domains", {"domain": "scam-kit.com", "reason": "phishing kit"})
    assert response.status_code in (200, 201), response.content
    before = pipeline_inferences(triton_server)
    (post_id,) = ingest(api, 1, url="https://login.scam-kit.com/verify")
    wait_until(lambda: all_scored([post_id]), timeout=SCORED_TIMEOUT, message=f"scored\n{worker.log_tail()}")
    post = Post.objects.get(id=post_id)
    score = post.scores.get()
    assert post.status == PostStatus.AUTO_REMOVED
    assert score.model_set == "short_circuit"
    assert score.short_circuit_reason.startswith("blocked_domain: ")
    assert score.text_score is None
    assert pipeline_inferences(triton_server) == before  # Triton was never asked

    # The block is this source's own: another source's post to the same domain goes to the models.
    other_source = SourceFactory()
    other = Api(client=APIClient(), source=other_source)
    other.client.credentials(HTTP_AUTHORIZATION=f"Api-Key {create_api_key(other_source)}")
    (other_id,) = ingest(other, 1, url="https://login.scam-kit.com/verify")
    wait_until(lambda: all_scored([other_id]), timeout=SCORED_TIMEOUT, message=f"scored\n{worker.log_tail()}")
    assert Post.objects.get(id=other_id).scores.get().model_set != "short_circuit"
    assert pipeline_inferences(triton_server) > before


def test_a_report_rescores_and_a_reported_post_is_never_auto_approved(api, worker):
    set_policy(remove=1.0, approve=1.0)  # would approve everything
    (post_id,) = ingest(api, 1)
    wait_until(lambda: all_scored([post_id]), timeout=SCORED_TIMEOUT, message=f"scored\n{worker.log_tail()}")
    post = Post.objects.get(id=post_id)
    assert post.status == PostStatus.AUTO_APPROVED
    response = api.post("reports", {"post_external_id": post.external_id, "reporter_id": "r-1", "reason": "spam"})
    assert response.status_code == 201, response.content
    wait_until(
        lambda: Score.objects.filter(post_id=post_id, revision=1).exists(),
        timeout=SCORED_TIMEOUT,
        message=f"re-score after report\n{worker.log_tail()}",
    )
    post.refresh_from_db()
    assert post.status == PostStatus.QUEUED
    rescored = Score.objects.get(post_id=post_id, revision=1)
    assert rescored.features["behaviour"]["report_count"] == 1.0
    assert rescored.action == Action.QUEUE
    assert Score.objects.filter(post_id=post_id).count() == 2


def test_webhook_delivered_to_a_local_receiver_with_a_valid_signature(api, worker):
    receiver, server = start_receiver(8253)
    try:
        api.source.callback_url = receiver.url
        api.source.webhook_secret = "integration-secret"
        api.source.save()
        set_policy(remove=0.0, approve=0.0)
        (post_id,) = ingest(api, 1)
        (got,) = receiver.wait_for(1, timeout=SCORED_TIMEOUT)
    finally:
        server.shutdown()
        server.server_close()
    assert verify_signature(secret="integration-secret", header=got.headers[SIGNATURE_HEADER], body=got.body)
    event = json.loads(got.body)
    assert event["data"]["post"]["id"] == post_id
    assert event["data"]["post"]["status"] == PostStatus.AUTO_REMOVED
    assert event["data"]["automatic"] is True
    wait_until(
        lambda: WebhookDelivery.objects.filter(post_id=post_id, status="delivered").exists(),
        timeout=10,
        message="delivery marked delivered",
    )


def test_triton_down_during_ingest_then_back_every_post_scored_once(api, worker, triton_server):
    server_control.stop(triton_server.config)
    offset = len(worker.log_text())
    try:
        ids = ingest(api, 10)
        wait_until(
            lambda: "Retry in" in worker.log_text()[offset:],
            timeout=30,
            message=f"score_batch retried on TritonUnavailable\n{worker.log_tail()}",
        )
        assert Post.objects.filter(id__in=ids, status=PostStatus.RECEIVED).count() == 10
    finally:
        server_control.start(triton_server.config, wait_s=120)
    wait_until(lambda: all_scored(ids), timeout=90, message=f"scored after restart\n{worker.log_tail()}")
    assert_scored_exactly_once(ids)


def test_inline_pre_publish_check_within_and_past_the_budget(api, worker):
    set_policy(remove=0.0, approve=0.0)
    response = api.post("posts?wait_ms=1000", payload(1))
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == PostStatus.AUTO_REMOVED
    assert body["score"] is not None and body["score"]["model_set"].startswith("behaviour_model:")

    # 1 ms cannot hold a model call: 202 now, the worker scores it (once) soon after
    response = api.post("posts?wait_ms=1", payload(2))
    assert response.status_code == 202, response.content
    post_id = response.json()["id"]
    wait_until(lambda: all_scored([post_id]), timeout=SCORED_TIMEOUT, message=f"scored\n{worker.log_tail()}")
    assert_scored_exactly_once([post_id, body["id"]])


def test_inline_check_and_worker_do_not_race_and_a_dead_check_loses_nothing(api, worker, triton_server):
    # The inline check owns the post: one model call in all (a decided post gets no task at
    # all), whatever the worker is doing.
    before = pipeline_inferences(triton_server)
    response = api.post("posts?wait_ms=1000", payload(3))
    assert response.status_code == 201, response.content
    inline_id = response.json()["id"]
    assert response.json()["score"] is not None

    # The web process dies between the commit and the inline check: the post is held and no
    # task exists. The sweeper (beat runs it every minute; here every poll) leaves it alone
    # while the short hold lasts, then enqueues it, and the worker scores it.
    from moderation.services.ingest import post_ingest
    from scoring.api import prepublish_hold
    from scoring.tasks import sweep_stuck_posts

    with prepublish_hold(budget_ms=50):
        post, created = post_ingest(source=api.source, payload=payload(4))
    assert created and post.status == PostStatus.RECEIVED
    time.sleep(1)
    assert sweep_stuck_posts() == 0  # still held (a live check may yet decide it): not enqueued

    def swept_and_scored() -> bool:
        sweep_stuck_posts()
        return all_scored([post.pk])

    wait_until(swept_and_scored, timeout=SCORED_TIMEOUT, message=f"scored\n{worker.log_tail()}")
    assert_scored_exactly_once([inline_id, post.pk])
    assert pipeline_inferences(triton_server) - before == 2


def test_posts_whose_enqueue_was_lost_are_swept_and_scored(api, worker, monkeypatch):
    # The broker was down at ingest: the post is stored, its task never published.
    monkeypatch.setattr("scoring.receivers.score_kick", lambda: None)
    ids = ingest(api, 3)
    assert Post.objects.filter(id__in=ids, status=PostStatus.RECEIVED).count() == 3
    from scoring.tasks import sweep_stuck_posts

    sweep_stuck_posts.delay(0)  # what beat runs every minute (threshold 0 instead of 300 s)
    wait_until(lambda: all_scored(ids), timeout=SCORED_TIMEOUT, message=f"swept and scored\n{worker.log_tail()}")
    assert_scored_exactly_once(ids)


def test_a_batch_ingest_is_scored_once_per_post_from_one_message_per_32_posts(api, worker, settings):
    from unittest import mock

    from scoring import tasks

    settings.SCORING_BATCH_SIZE = 32  # the worker's default too
    count = 70
    with mock.patch.object(tasks.score_batch, "delay", wraps=tasks.score_batch.delay) as published:
        response = api.post("posts/batch", {"posts": [payload(n) for n in range(count)]})
    assert response.status_code in (200, 201, 207), response.content
    ids = [item["id"] for item in response.json()["results"]]
    assert len(set(ids)) == count
    assert published.call_count == 3  # ceil(70 / 32)
    assert sorted(i for call in published.call_args_list for i in call.args[0]) == sorted(ids)
    wait_until(lambda: all_scored(ids), timeout=SCORED_TIMEOUT, message=f"{count} posts scored\n{worker.log_tail()}")
    assert_scored_exactly_once(ids)
