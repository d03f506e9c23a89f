"""The abuse score through the scoring transaction: stored on the Score and the Post, applied
by the source's thresholds after the spam policy, and sent in the webhook payload."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

import pytest

from moderation.models import PostStatus
from scoring.models import Action, WebhookDelivery
from scoring.services.scoring import score_posts
from scoring.services.webhooks import webhook_deliver
from scoring.triton_client import ScoringInput, ScoringOutput
from tests.scoring.pipeline_support import FakeClient, make_post, make_source
from tests.scoring.webhook_receiver import start_receiver

pytestmark = pytest.mark.django_db

ABUSE = {"idiot": 0.97, "moron": 0.6}


class AbuseFakeClient(FakeClient):
    """FakeClient's spam scores, with the abuse probability a bundle with an abuse model adds."""

    def score(self, inputs: Sequence[ScoringInput]) -> list[ScoringOutput]:
        return [
            dataclasses.replace(out, abuse_prob=next((v for k, v in ABUSE.items() if k in item.text), 0.02))
            for item, out in zip(inputs, super().score(inputs), strict=True)
        ]


def test_the_abuse_score_holds_or_removes_what_the_spam_policy_would_approve():
    source = make_source(abuse_queue_threshold=0.5, abuse_remove_threshold=0.95)
    removed, queued, fine = (make_post(source=source, text=t) for t in ("you idiot", "you moron", "nice day"))
    score_posts(post_ids=[removed.id, queued.id, fine.id], client=AbuseFakeClient())
    for post in (removed, queued, fine):
        post.refresh_from_db()
    assert (removed.status, queued.status, fine.status) == (
        PostStatus.AUTO_REMOVED,
        PostStatus.QUEUED,
        PostStatus.AUTO_APPROVED,
    )
    assert (removed.abuse_score, queued.abuse_score, fine.abuse_score) == pytest.approx((0.97, 0.6, 0.02))
    held = queued.scores.get()
    assert held.action == Action.QUEUE and held.abuse_score == pytest.approx(0.6)
    assert held.routing_reason == "abuse 0.600 >= queue 0.500"
    assert held.features["abuse"] == held.routing_reason
    assert removed.scores.get().features["abuse"] == "abuse 0.970 >= remove 0.950"
    assert queued.category_scores == {"spam": queued.final_score, "abuse": pytest.approx(0.6)}


def test_without_an_abuse_model_nothing_changes():
    post = make_post(text="you idiot")
    score_posts(post_ids=[post.id], client=FakeClient())
    post.refresh_from_db()
    assert post.status == PostStatus.AUTO_APPROVED and post.abuse_score is None
    assert post.scores.get().abuse_score is None


def test_the_webhook_carries_the_category_scores(django_capture_on_commit_callbacks, monkeypatch):
    receiver, server = start_receiver(8252)
    try:
        source = make_source(callback_url=receiver.url, webhook_secret="s3cret", abuse_remove_threshold=0.95)
        post = make_post(source=source, text="you idiot")
        monkeypatch.setattr("scoring.tasks.deliver_webhook.delay", lambda delivery_id: None)
        with django_capture_on_commit_callbacks(execute=True):
            score_posts(post_ids=[post.id], client=AbuseFakeClient())
        post.refresh_from_db()
        webhook_deliver(delivery_id=WebhookDelivery.objects.get(post=post).pk)
        (got,) = receiver.wait_for(1)
    finally:
        server.shutdown()
        server.server_close()
    sent = json.loads(got.body)["data"]["post"]
    assert sent["status"] == PostStatus.AUTO_REMOVED
    assert sent["category_scores"] == {"spam": post.final_score, "abuse": pytest.approx(0.97)}


def _auto(action: str, category: str) -> float:
    from prometheus_client import REGISTRY

    labels = {"source": "auto", "action": action, "category": category}
    return REGISTRY.get_sample_value("moderation_decisions_total", labels) or 0.0


def test_automatic_decisions_are_counted_by_the_category_that_chose_them():
    source = make_source(abuse_queue_threshold=0.5, abuse_remove_threshold=0.95)
    posts = [make_post(source=source, text=t) for t in ("you idiot", "you moron", "nice day")]
    before = {key: _auto(*key) for key in (("remove", "abuse"), ("queue", "abuse"), ("approve", "spam"))}
    score_posts(post_ids=[p.id for p in posts], client=AbuseFakeClient())
    after = {key: _auto(*key) - value for key, value in before.items()}
    assert after == {("remove", "abuse"): 1, ("queue", "abuse"): 1, ("approve", "spam"): 1}
