from __future__ import annotations

from datetime import timedelta

import pytest
from celery import current_app
from celery.exceptions import Retry
from django.contrib.auth.models import User
from django.db import OperationalError
from django.urls import reverse
from django.utils import timezone

from moderation.models import Post, PostStatus
from scoring import tasks
from scoring.models import DecisionPolicy, Score, WebhookDelivery
from scoring.services.inference import TritonUnavailable
from scoring.workqueue import claim_post
from tests.scoring.pipeline_support import FakeClient, make_post, make_source

# Every test starts and ends with an empty cache (claims, done markers), whatever it needs.
pytestmark = pytest.mark.usefixtures("clean_cache")


def test_task_options():
    for task in (
        tasks.score_batch,
        tasks.rescore_post,
        tasks.rescore_waiting,
        tasks.score_post,
        tasks.score_posts,
        tasks.score_waiting,
    ):
        assert task.acks_late is True
        assert TritonUnavailable in task.autoretry_for
        assert OperationalError in task.autoretry_for
        assert task.retry_backoff and task.retry_backoff_max == 60
        assert task.max_retries >= 100
        assert task.soft_time_limit < task.time_limit
    assert tasks.score_batch.name == "scoring.score_batch"
    assert tasks.deliver_webhook.acks_late is True


def test_beat_runs_the_sweeper(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["scoring.sweep_stuck_posts"]
    assert entry["task"] == tasks.sweep_stuck_posts.name


@pytest.mark.django_db
def test_score_batch_task_scores_through_the_service(monkeypatch):
    monkeypatch.setattr("scoring.services.scoring.get_client", lambda: FakeClient())
    post = make_post(text="spam")
    tasks.score_batch.apply(args=[[post.id]]).get()
    assert Post.objects.get(pk=post.pk).status == PostStatus.AUTO_REMOVED


@pytest.mark.django_db
def test_score_batch_retries_while_triton_is_down(monkeypatch):
    from tests.scoring.pipeline_support import down_client

    monkeypatch.setattr("scoring.services.scoring.get_client", down_client)
    post = make_post(text="spam")
    # In-process the task asks for a retry; a real worker re-publishes it with backoff
    # (tests/integration/ stops and restarts a real Triton).
    with pytest.raises(Retry):
        tasks.score_batch.apply(args=[[post.id]], throw=True).get()
    assert Post.objects.get(pk=post.pk).status == PostStatus.RECEIVED


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "forwarded"),
    [
        ("scoring.score_post", [7], {}, {"post_ids": [7], "after_report": False}),
        ("scoring.score_post", [7], {"after_report": True}, {"post_ids": [7], "after_report": True}),
        ("scoring.score_posts", [[7, 8]], {}, {"post_ids": [7, 8], "after_report": False}),
        ("scoring.score_waiting", [], {}, {"post_ids": None, "after_report": False}),
    ],
)
def test_the_previous_versions_task_names_forward_to_score_batch(monkeypatch, name, args, kwargs, forwarded):
    """Messages queued under the previous version's task names at upgrade are scored by the one
    task, as it would score the messages published now."""
    calls: list[dict[str, object]] = []
    monkeypatch.setattr("scoring.services.batching.score_batch", lambda **kw: calls.append(kw))
    current_app.tasks[name].apply(args=args, kwargs=kwargs, throw=True).get()
    assert calls == [forwarded]


@pytest.mark.django_db
def test_a_message_under_a_previous_name_scores_its_post_and_retries_a_claimed_one(monkeypatch):
    monkeypatch.setattr("scoring.services.scoring.get_client", lambda: FakeClient())
    held, post = make_post(text="hi"), make_post(text="spam")
    assert claim_post(held.id, "another-worker")
    with pytest.raises(Retry):  # the retry is published under the old name, which stays registered
        current_app.tasks["scoring.score_post"].apply(args=[held.id], throw=True).get()
    current_app.tasks["scoring.score_post"].apply(args=[post.id], throw=True).get()
    assert Post.objects.get(pk=post.pk).status == PostStatus.AUTO_REMOVED
    assert Post.objects.get(pk=held.pk).status == PostStatus.RECEIVED


@pytest.mark.django_db
def test_sweeper_requeues_stuck_posts(monkeypatch):
    sent: list[list[int]] = []
    monkeypatch.setattr(tasks.score_batch, "delay", lambda post_ids: sent.append(post_ids))
    stuck = make_post(received_at=timezone.now() - timedelta(hours=1))
    make_post()
    assert tasks.sweep_stuck_posts(older_than_s=60) == 1
    assert sent == [[stuck.id]]


@pytest.mark.django_db
def test_admin_policy_save_creates_a_new_version(client):
    admin = User.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin)
    current = DecisionPolicy.objects.get(is_active=True)
    url = reverse("admin:scoring_decisionpolicy_change", args=[current.pk])
    response = client.post(
        url, {"remove_threshold": "0.8", "approve_threshold": "0.1", "escalate_threshold": "0.85", "note": "tighter"}
    )
    assert response.status_code == 302
    current.refresh_from_db()
    assert current.remove_threshold == 0.9 and not current.is_active  # old version untouched
    new = DecisionPolicy.objects.get(is_active=True)
    assert (new.version, new.remove_threshold, new.escalate_threshold, new.created_by) == (2, 0.8, 0.85, admin)


@pytest.mark.django_db
def test_admin_pages_and_webhook_retry_action(client, monkeypatch):
    admin = User.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin)
    monkeypatch.setattr("scoring.services.scoring.get_client", lambda: FakeClient())
    post = make_post(source=make_source(callback_url="http://127.0.0.1:8259/x", webhook_secret="k"), text="spam")
    tasks.score_batch.apply(args=[[post.id]])
    delivery = WebhookDelivery.objects.get(post=post)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status="failed", attempts=10)
    for name in ("score", "decisionpolicy", "webhookdelivery"):
        assert client.get(reverse(f"admin:scoring_{name}_changelist")).status_code == 200
    assert client.get(reverse("admin:scoring_score_change", args=[Score.objects.get().pk])).status_code == 200
    sent: list[int] = []
    monkeypatch.setattr(tasks.deliver_webhook, "delay", lambda delivery_id: sent.append(delivery_id))
    response = client.post(
        reverse("admin:scoring_webhookdelivery_changelist"),
        {"action": "retry_deliveries", "_selected_action": [delivery.pk]},
    )
    assert response.status_code == 302
    delivery.refresh_from_db()
    assert delivery.status == "pending"
