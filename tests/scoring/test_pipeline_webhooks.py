from __future__ import annotations

import json
import time

import pytest

from moderation.models import Post, PostStatus
from moderation.services.bulk import bulk_decide, bulk_undo
from scoring.models import WebhookDelivery
from scoring.services.scoring import score_posts
from scoring.services.webhooks import (
    SIGNATURE_HEADER,
    WebhookDeliveryFailed,
    encode_body,
    sign,
    verify_signature,
    webhook_deliver,
    webhook_enqueue_for_decision,
)
from tests.dashboard.dashboard_factories import UserFactory
from tests.scoring.pipeline_support import FakeClient, make_post, make_source
from tests.scoring.webhook_receiver import start_receiver

SECRET = "s3cret"


@pytest.fixture
def receiver():
    rec, server = start_receiver(8251)
    yield rec
    server.shutdown()
    server.server_close()


def test_signature_round_trip_and_tampering():
    body = encode_body({"id": "evt_1", "data": {"x": 1}})
    now = int(time.time())
    header = sign(secret=SECRET, body=body, timestamp=now)
    assert header.startswith(f"t={now},v1=")
    assert verify_signature(secret=SECRET, header=header, body=body)
    assert not verify_signature(secret="other", header=header, body=body)
    assert not verify_signature(secret=SECRET, header=header, body=body + b" ")
    assert not verify_signature(secret=SECRET, header=header, body=body, now=now + 301)  # replay
    assert not verify_signature(secret=SECRET, header="garbage", body=body)


@pytest.mark.django_db
def test_an_automatic_decision_is_delivered_signed(receiver, django_capture_on_commit_callbacks, monkeypatch):
    source = make_source(callback_url=receiver.url, webhook_secret=SECRET)
    post = make_post(source=source, text="spam")
    sent: list[int] = []
    monkeypatch.setattr("scoring.tasks.deliver_webhook.delay", lambda delivery_id: sent.append(delivery_id))
    with django_capture_on_commit_callbacks(execute=True):
        score_posts(post_ids=[post.id], client=FakeClient())
    delivery = WebhookDelivery.objects.get(post=post)
    assert sent == [delivery.pk]
    webhook_deliver(delivery_id=delivery.pk)

    (got,) = receiver.wait_for(1)
    assert verify_signature(secret=SECRET, header=got.headers[SIGNATURE_HEADER], body=got.body)
    event = json.loads(got.body)
    assert event["id"] == delivery.event_id
    assert event["type"] == "post.decision"
    assert event["data"]["post"]["status"] == PostStatus.AUTO_REMOVED
    assert event["data"]["post"]["external_id"] == post.external_id
    assert event["data"]["automatic"] is True
    delivery.refresh_from_db()
    assert delivery.status == WebhookDelivery.Status.DELIVERED and delivery.attempts == 1
    # a second run of the task does not send again
    webhook_deliver(delivery_id=delivery.pk)
    assert len(receiver.received) == 1


@pytest.mark.django_db
def test_queued_posts_and_sources_without_callback_send_nothing():
    quiet = make_post(text="spam")  # source without callback_url
    source = make_source(callback_url="http://127.0.0.1:8252/x", webhook_secret=SECRET)
    queued = make_post(source=source, text="maybe")
    score_posts(post_ids=[quiet.id, queued.id], client=FakeClient())
    assert not WebhookDelivery.objects.exists()


@pytest.mark.django_db
def test_failures_retry_then_give_up(receiver, settings):
    settings.WEBHOOK_MAX_ATTEMPTS = 2
    receiver.status = 500
    source = make_source(callback_url=receiver.url, webhook_secret=SECRET)
    post = make_post(source=source, text="x", status=PostStatus.REMOVED)
    delivery = webhook_enqueue_for_decision(post)
    assert delivery is not None
    with pytest.raises(WebhookDeliveryFailed):
        webhook_deliver(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("pending", 1, 500)
    webhook_deliver(delivery_id=delivery.pk)  # last attempt: no raise, gives up
    delivery.refresh_from_db()
    assert delivery.status == WebhookDelivery.Status.FAILED and delivery.attempts == 2


@pytest.mark.django_db
def test_unreachable_receiver_is_a_retryable_failure(settings):
    settings.WEBHOOK_CONNECT_TIMEOUT_S = 0.5
    source = make_source(callback_url="http://127.0.0.1:8259/none", webhook_secret=SECRET)
    post = make_post(source=source, status=PostStatus.APPROVED)
    delivery = webhook_enqueue_for_decision(post)
    assert delivery is not None
    with pytest.raises(WebhookDeliveryFailed):
        webhook_deliver(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert "ConnectionError" in delivery.last_error


@pytest.mark.django_db
def test_moderator_decision_enqueue_is_idempotent():
    source = make_source(callback_url="http://127.0.0.1:8252/x", webhook_secret=SECRET)
    post = make_post(source=source, status=PostStatus.REMOVED)
    first = webhook_enqueue_for_decision(post)
    second = webhook_enqueue_for_decision(post)
    assert first is not None and second is not None and first.pk == second.pk
    assert WebhookDelivery.objects.count() == 1
    assert webhook_enqueue_for_decision(make_post(source=source, status=PostStatus.QUEUED)) is None


@pytest.mark.django_db
def test_a_recorded_moderator_decision_enqueues_a_webhook():
    from django.contrib.auth.models import User

    from moderation.models import Decision
    from moderation.signals import decision_recorded

    source = make_source(callback_url="http://127.0.0.1:8252/x", webhook_secret=SECRET)
    post = make_post(source=source, status=PostStatus.REMOVED)
    moderator = User.objects.create_user("mod")
    decision = Decision.objects.create(post=post, moderator=moderator, label="spam", reason_code="scam")
    decision_recorded.send(sender=Decision, decision=decision, post=post)
    delivery = WebhookDelivery.objects.get(post=post)
    assert delivery.payload["data"]["automatic"] is False
    assert delivery.payload["data"]["decision"]["reason_code"] == "scam"


@pytest.mark.django_db
def test_a_bulk_undo_tells_the_platform_the_restored_status(receiver, django_capture_on_commit_callbacks, monkeypatch):
    source = make_source(callback_url=receiver.url, webhook_secret=SECRET)
    queued, approved = make_post(source=source, text="maybe"), make_post(source=source, text="fine")
    Post.objects.filter(pk=queued.pk).update(status=PostStatus.QUEUED)
    Post.objects.filter(pk=approved.pk).update(status=PostStatus.AUTO_APPROVED)
    moderator = UserFactory(username="undoer", role="moderator")
    sent: list[int] = []
    monkeypatch.setattr("scoring.tasks.deliver_webhook.delay", lambda delivery_id: sent.append(delivery_id))
    with django_capture_on_commit_callbacks(execute=True):
        bulk = bulk_decide(moderator=moderator, label="spam", reason_code="scam", post_ids=[queued.pk, approved.pk])
    decided = set(WebhookDelivery.objects.values_list("pk", flat=True))
    assert set(sent) == decided
    # Each removal: its decision event and its statement of reasons.
    assert sorted(WebhookDelivery.objects.values_list("event_type", flat=True)) == [
        "post.decision",
        "post.decision",
        "statement_of_reasons",
        "statement_of_reasons",
    ]

    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        bulk_undo(bulk=bulk, moderator=moderator)

    undo_rows = WebhookDelivery.objects.exclude(pk__in=decided).order_by("post_id")
    assert [d.post_id for d in undo_rows] == [queued.pk, approved.pk]
    assert sorted(sent) == sorted(d.pk for d in undo_rows)
    for delivery in undo_rows:
        webhook_deliver(delivery_id=delivery.pk)
    got = receiver.wait_for(2)
    events = {}
    for request in got:
        assert verify_signature(secret=SECRET, header=request.headers[SIGNATURE_HEADER], body=request.body)
        event = json.loads(request.body)
        events[event["data"]["post"]["id"]] = event
    assert events[queued.pk]["type"] == "post.decision"
    assert events[queued.pk]["data"]["post"]["status"] == PostStatus.QUEUED
    assert events[approved.pk]["data"]["post"]["status"] == PostStatus.AUTO_APPROVED
    for event in events.values():
        assert event["data"]["undo"]["bulk_action_id"] == bulk.pk
        assert "decision" not in event["data"]
    # the undo's events are new events, not replays of the decision's
    assert {e["id"] for e in events.values()}.isdisjoint(
        WebhookDelivery.objects.filter(pk__in=decided).values_list("event_id", flat=True)
    )


@pytest.mark.django_db
def test_a_bulk_undo_without_callback_url_sends_nothing(django_capture_on_commit_callbacks):
    post = make_post(text="maybe")
    Post.objects.filter(pk=post.pk).update(status=PostStatus.QUEUED)
    moderator = UserFactory(username="undoer2", role="moderator")
    bulk = bulk_decide(moderator=moderator, label="spam", reason_code="scam", post_ids=[post.pk])
    bulk_undo(bulk=bulk, moderator=moderator)
    assert Post.objects.get(pk=post.pk).status == PostStatus.QUEUED
    assert not WebhookDelivery.objects.exists()
