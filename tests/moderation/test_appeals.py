"""Appeals: the API opens one (scope, tenancy, idempotency), a different moderator upholds or
overturns it, an overturn relabels the training example, the platform is told, and the
appeal and overturn rates."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from core.errors import Conflict, Forbidden
from dashboard.selectors.appeals import AUTOMATIC, appeal_figures
from feedback.selectors import effective_examples
from moderation.models import ApiScope, Appeal, AppealStatus, AuditLog, PostStatus
from moderation.services.appeals import appeal_resolve, appeal_submit
from moderation.services.decisions import decision_record
from scoring.models import WebhookDelivery
from tests.dashboard.dashboard_factories import UserFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403
from tests.dashboard.dashboard_fixtures import client_for
from tests.factories import create_api_key
from tests.scoring.pipeline_support import make_post, make_source

pytestmark = pytest.mark.django_db

HOOK = {"callback_url": "https://hooks.example.com/moderation", "webhook_secret": "s3cret"}


@pytest.fixture
def peer(db):
    return UserFactory(username="peer", role="moderator")


def _api(source, scopes=(ApiScope.APPEALS_WRITE,)) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {create_api_key(source, scopes=scopes)}")
    return client


def test_the_platform_appeals_a_decided_post_once(moderator):
    source = make_source()
    post = make_post(source=source, text="my shop")
    decision_record(post=post, moderator=moderator, label="spam", reason_code="scam")
    api = _api(source)
    body = {"post_external_id": post.external_id, "statement": "It is my own shop."}
    first = api.post("/api/v1/appeals", body, format="json")
    assert first.status_code == 201, first.content
    assert first.json()["status"] == "pending" and first.json()["appealed_status"] == PostStatus.REMOVED
    again = api.post("/api/v1/appeals", body, format="json")
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    appeal = Appeal.objects.get()
    assert appeal.decision is not None and appeal.decision.moderator == moderator
    assert appeal.statement == "It is my own shop."
    assert AuditLog.objects.filter(action="appeal.submit", target_id=str(appeal.pk)).count() == 1


def test_an_appeal_needs_a_decided_post_the_scope_and_the_posts_own_source():
    source, other = make_source(), make_source()
    waiting = make_post(source=source, status=PostStatus.QUEUED)
    decided = make_post(source=other, status=PostStatus.AUTO_REMOVED)
    api = _api(source)
    not_decided = api.post("/api/v1/appeals", {"post_external_id": waiting.external_id}, format="json")
    assert not_decided.status_code == 409 and not_decided.json()["error"]["code"] == "not_decided"
    foreign = api.post("/api/v1/appeals", {"post_external_id": decided.external_id}, format="json")
    assert foreign.status_code == 404 and foreign.json()["error"]["code"] == "post_not_found"
    unscoped = _api(other, scopes=[ApiScope.REPORTS_WRITE]).post(
        "/api/v1/appeals", {"post_external_id": decided.external_id}, format="json"
    )
    assert unscoped.status_code == 403 and unscoped.json()["error"]["code"] == "insufficient_scope"
    bad = api.post("/api/v1/appeals", {"statement": 5}, format="json")
    assert bad.status_code == 400 and set(bad.json()["error"]["fields"]) >= {"post_external_id"}
    assert not Appeal.objects.exists()


def test_the_deciding_moderator_cannot_review_their_own_decision(moderator):
    post = make_post(source=make_source())
    decision_record(post=post, moderator=moderator, label="spam", reason_code="scam")
    appeal, _ = appeal_submit(source=post.source, post_external_id=post.external_id, statement="")
    with pytest.raises(Forbidden):
        appeal_resolve(appeal=appeal, moderator=moderator, outcome="overturn")
    appeal.refresh_from_db()
    assert appeal.status == AppealStatus.PENDING


def test_an_overturn_relabels_the_example_and_tells_the_platform(moderator, peer, django_capture_on_commit_callbacks):
    post = make_post(source=make_source(**HOOK), text="my shop")
    decision_record(post=post, moderator=moderator, label="spam", reason_code="scam")
    (example,) = effective_examples()
    assert example.label == "spam"
    appeal, _ = appeal_submit(source=post.source, post_external_id=post.external_id, statement="mine")
    with django_capture_on_commit_callbacks():
        appeal_resolve(appeal=appeal, moderator=peer, outcome="overturn", reason_code="legitimate", note="own shop")
    post.refresh_from_db()
    appeal.refresh_from_db()
    assert post.status == PostStatus.APPROVED
    assert appeal.status == AppealStatus.OVERTURNED and appeal.resolved_by == peer
    (example,) = effective_examples()
    assert example.label == "ham" and example.decided_by_username == "peer"
    event = WebhookDelivery.objects.get(event_type="appeal.decided")
    assert event.post == post and event.payload["data"]["appeal"]["outcome"] == "overturned"
    assert (
        event.payload["data"]["post"]["status"] == PostStatus.APPROVED and event.payload["data"]["note"] == "own shop"
    )
    assert WebhookDelivery.objects.filter(event_type="post.decision", post=post).count() == 2  # decision, overturn
    assert AuditLog.objects.filter(action="appeal.overturn", target_id=str(appeal.pk)).exists()
    with pytest.raises(Conflict):
        appeal_resolve(appeal=appeal, moderator=peer, outcome="uphold")


def test_an_upheld_automatic_removal_stays_and_the_rates_count_it(peer, moderator):
    source = make_source()
    auto = [make_post(source=source, status=PostStatus.AUTO_REMOVED) for _ in range(4)]
    upheld, _ = appeal_submit(source=source, post_external_id=auto[0].external_id, statement="")
    overturned, _ = appeal_submit(source=source, post_external_id=auto[1].external_id, statement="")
    appeal_resolve(appeal=upheld, moderator=peer, outcome="uphold")
    appeal_resolve(appeal=overturned, moderator=peer, outcome="overturn", reason_code="legitimate")
    auto[0].refresh_from_db()
    assert auto[0].status == PostStatus.AUTO_REMOVED
    manual = make_post(source=source)
    decision_record(post=manual, moderator=moderator, label="spam", reason_code="scam")
    decision_record(post=make_post(source=source), moderator=moderator, label="spam", reason_code="scam")
    appeal_submit(source=source, post_external_id=manual.external_id, statement="")
    figures = {f.who: f for f in appeal_figures()}
    automatic = figures[AUTOMATIC]
    assert (automatic.decided, automatic.appealed, automatic.resolved, automatic.overturned) == (4, 2, 2, 1)
    assert automatic.appeal_rate == 0.5 and automatic.overturn_rate == 0.5
    mod = figures["mod"]
    assert (mod.decided, mod.appealed, mod.resolved) == (2, 1, 0) and mod.overturn_rate is None


def test_the_appeals_queue_and_review_page(mod_client, moderator, peer):
    post = make_post(source=make_source(), text="the original words")
    decision_record(post=post, moderator=moderator, label="spam", reason_code="scam")
    appeal, _ = appeal_submit(source=post.source, post_external_id=post.external_id, statement="please look again")
    queue = mod_client.get(reverse("dashboard:appeals")).content.decode()
    assert f'data-appeal="{appeal.pk}"' in queue and "please look again" in queue
    own = mod_client.get(reverse("dashboard:appeal", args=[appeal.pk])).content.decode()
    assert "data-own-decision" in own and "data-appeal-form" not in own and "the original words" in own
    refused = mod_client.post(reverse("dashboard:appeal", args=[appeal.pk]), {"outcome": "overturn"})
    assert refused.status_code == 400
    peer_client = client_for(peer)
    page = peer_client.get(reverse("dashboard:appeal", args=[appeal.pk])).content.decode()
    assert "data-appeal-form" in page and "scam" in page
    done = peer_client.post(reverse("dashboard:appeal", args=[appeal.pk]), {"outcome": "uphold", "note": "still spam"})
    assert done.status_code == 302
    appeal.refresh_from_db()
    assert appeal.status == AppealStatus.UPHELD and appeal.resolution_note == "still spam"
    metrics = mod_client.get(reverse("dashboard:metrics")).content.decode()
    assert 'data-figures-for="mod"' in metrics and 'data-figures-for="automatic"' in metrics
