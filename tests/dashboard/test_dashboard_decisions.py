"""Decisions from every path record a reason; single decisions are undoable from the post and the
audit log; a decided post is read-only and needs an explicit override; stale forms are refused."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from core.errors import Conflict, Forbidden
from moderation.models import AppealStatus, AuditLog, Decision, PostStatus, ReasonCode, ReporterRecord
from moderation.services.appeals import appeal_resolve, appeal_submit
from moderation.services.bulk import bulk_decide, bulk_undo
from moderation.services.decisions import (
    decision_can_undo,
    decision_record,
    decision_undo,
    key_reason,
    post_version,
)
from moderation.signals import decisions_undone
from tests.dashboard.dashboard_factories import PostFactory, ReportFactory, UserFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403
from tests.dashboard.dashboard_fixtures import client_for

pytestmark = pytest.mark.django_db


def test_key_reason_follows_setting_and_falls_back_to_first_active(settings):
    settings.DASHBOARD_KEY_REASONS = {"spam": "phishing", "ham": "no-such-code"}
    assert key_reason(label="spam") == "phishing"
    assert key_reason(label="ham") == "legitimate"  # first active ham reason by ordering
    ReasonCode.objects.filter(code="phishing").update(is_active=False)
    assert key_reason(label="spam") == "commercial-spam"


def test_every_path_records_a_reason(mod_client, moderator, settings):
    settings.DASHBOARD_KEY_REASONS = {"spam": "scam", "ham": "legitimate"}
    quick = PostFactory()
    response = mod_client.post(
        reverse("dashboard:decide", args=[quick.pk]),
        {"label": "spam", "quick": "1"},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 200
    assert Decision.objects.get(post=quick).reason_code == "scam"
    chosen = PostFactory()
    mod_client.post(
        reverse("dashboard:decide", args=[chosen.pk]),
        {"label": "spam", "quick": "1", "reason_code": "phishing"},
        HTTP_ACCEPT="application/json",
    )
    assert Decision.objects.get(post=chosen).reason_code == "phishing"
    bulk_posts = [PostFactory(), PostFactory()]
    mod_client.post(reverse("dashboard:bulk"), {"label": "ham", "post_ids": [p.pk for p in bulk_posts]})
    assert set(Decision.objects.filter(post__in=bulk_posts).values_list("reason_code", flat=True)) == {"legitimate"}
    assert AuditLog.objects.get(action="bulk.decide").after["reason_code"] == "legitimate"


def test_already_decided_needs_override_and_stale_form_is_refused(mod_client, moderator):
    post = PostFactory()
    version = post_version(post)
    url = reverse("dashboard:decide", args=[post.pk])
    form = {"label": "spam", "reason_code": "scam", "version": version}
    assert mod_client.post(url, form).status_code == 302
    # The same form submitted again (a double click, a second tab): refused, not recorded twice.
    response = mod_client.post(url, form, HTTP_ACCEPT="application/json")
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "stale" and "Already decided: spam by mod" in error["message"]
    # A fresh page without override is refused as already decided; with override it is recorded.
    post.refresh_from_db()
    fresh = {"label": "ham", "reason_code": "legitimate", "version": post_version(post)}
    response = mod_client.post(url, fresh, HTTP_ACCEPT="application/json")
    assert response.json()["error"]["code"] == "already_decided"
    assert mod_client.post(url, {**fresh, "override": "1"}, HTTP_ACCEPT="application/json").status_code == 200
    assert list(Decision.objects.filter(post=post).order_by("pk").values_list("label", flat=True)) == ["spam", "ham"]


def test_detail_of_decided_post_is_read_only_with_undo(mod_client, moderator):
    post = PostFactory()
    decision = decision_record(post=post, moderator=moderator, label="spam", reason_code="phishing")
    html = mod_client.get(reverse("dashboard:post_detail", args=[post.pk])).content.decode()
    assert "data-already-decided" in html and "Already decided" in html and "by <strong>mod</strong>" in html
    assert "Phishing or credential theft" in html  # the reason's label, not its code
    assert reverse("dashboard:decision_undo", args=[decision.pk]) in html
    assert 'name="override" value="1"' in html and '<details class="override"' in html
    post.refresh_from_db()
    assert post.claimed_by is None  # reading a decided post claims nothing


def test_single_undo_restores_status_counters_records_and_signals(moderator):
    post = PostFactory()
    ReportFactory(post=post, reporter_id="r1", reason="spam")
    received = []

    def handler(sender, decisions, bulk_action, posts, **kwargs):
        received.append(([d.pk for d in decisions], bulk_action, [p.status for p in posts]))

    decision = decision_record(post=post, moderator=moderator, label="spam", reason_code="scam")
    record = ReporterRecord.objects.get(reporter_id="r1")
    assert (record.upheld, record.rejected) == (1, 0)
    decisions_undone.connect(handler)
    try:
        decision_undo(decision=decision, moderator=moderator)
    finally:
        decisions_undone.disconnect(handler)
    post.refresh_from_db()
    post.author.refresh_from_db()
    assert post.status == PostStatus.QUEUED and post.author.spam_count == 0
    record.refresh_from_db()
    assert (record.upheld, record.rejected) == (0, 0)
    assert received == [([decision.pk], None, [PostStatus.QUEUED])]
    entry = AuditLog.objects.get(action="post.undo")
    assert entry.before["decision_id"] == decision.pk and entry.after == {"status": "queued"}
    with pytest.raises(Conflict):
        decision_undo(decision=decision, moderator=moderator)


def test_undo_rules_window_owner_bulk_and_superseded(moderator, admin_user, settings):
    other = UserFactory(username="other", role="moderator")
    post = PostFactory()
    first = decision_record(post=post, moderator=moderator, label="spam")
    with pytest.raises(Forbidden):
        decision_undo(decision=first, moderator=other)  # not theirs, not an admin
    second = decision_record(post=post, moderator=moderator, label="ham", override=True)
    with pytest.raises(Conflict) as exc:
        decision_undo(decision=first, moderator=moderator)
    assert exc.value.code == "superseded"
    decision_undo(decision=second, moderator=admin_user)  # an admin may
    post.refresh_from_db()
    assert post.status == PostStatus.REMOVED  # back to the first decision's outcome
    late = decision_record(post=PostFactory(), moderator=moderator, label="spam")
    Decision.objects.filter(pk=late.pk).update(created_at=timezone.now() - timedelta(seconds=301))
    late.refresh_from_db()
    with pytest.raises(Conflict) as exc:
        decision_undo(decision=late, moderator=moderator)
    assert exc.value.code == "undo_expired"
    bulk = bulk_decide(moderator=moderator, label="spam", post_ids=[PostFactory().pk])
    with pytest.raises(Conflict) as exc:
        decision_undo(decision=Decision.objects.get(bulk_action=bulk), moderator=moderator)
    assert exc.value.code == "part_of_bulk"


def test_audit_log_offers_undo_for_decisions_and_bulk(mod_client, moderator):
    post = PostFactory()
    decision = decision_record(post=post, moderator=moderator, label="spam")
    bulk = bulk_decide(moderator=moderator, label="ham", post_ids=[PostFactory().pk, PostFactory().pk])
    html = mod_client.get(reverse("dashboard:audit")).content.decode()
    assert reverse("dashboard:decision_undo", args=[decision.pk]) in html
    assert reverse("dashboard:bulk_undo", args=[bulk.pk]) in html
    # Another moderator sees no Undo for someone else's actions; an analyst none at all.
    other_html = client_for(UserFactory(username="o2", role="moderator")).get(reverse("dashboard:audit"))
    assert "data-audit-undo" not in other_html.content.decode()
    response = mod_client.post(
        reverse("dashboard:decision_undo", args=[decision.pk]), {"next": reverse("dashboard:audit")}
    )
    assert response.status_code == 302 and response["Location"] == reverse("dashboard:audit")
    post.refresh_from_db()
    assert post.status == PostStatus.QUEUED
    html = mod_client.get(reverse("dashboard:audit")).content.decode()
    assert reverse("dashboard:decision_undo", args=[decision.pk]) not in html
    assert 'data-audit-action="post.undo"' in html


def test_audit_shows_a_readable_diff(mod_client, moderator):
    decision_record(post=PostFactory(), moderator=moderator, label="spam", reason_code="phishing")
    html = mod_client.get(reverse("dashboard:audit")).content.decode()
    assert '<dl class="diff">' in html
    assert "<del>Queued for review</del> → <ins>Removed by moderator</ins>" in html
    assert "Reason code</dt><dd><ins>phishing</ins>" in html


def test_undo_view_refuses_other_moderators(moderator):
    decision = decision_record(post=PostFactory(), moderator=moderator, label="spam")
    other = client_for(UserFactory(username="o3", role="moderator"))
    response = other.post(reverse("dashboard:decision_undo", args=[decision.pk]), HTTP_ACCEPT="application/json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "not_yours"
    decision.refresh_from_db()
    assert decision.undone_at is None


def test_single_undo_tells_the_platform(moderator, django_capture_on_commit_callbacks, monkeypatch):
    from scoring.models import WebhookDelivery

    monkeypatch.setattr("scoring.tasks.deliver_webhook.delay", lambda delivery_id: None)
    post = PostFactory()
    type(post.source).objects.filter(pk=post.source_id).update(
        callback_url="http://127.0.0.1:9/hook", webhook_secret="s3cret"
    )
    post.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        decision = decision_record(post=post, moderator=moderator, label="spam")
    decided = set(WebhookDelivery.objects.values_list("pk", flat=True))
    # the decision and its statement of reasons
    assert sorted(WebhookDelivery.objects.values_list("event_type", flat=True)) == [
        "post.decision",
        "statement_of_reasons",
    ]
    with django_capture_on_commit_callbacks(execute=True):
        decision_undo(decision=decision, moderator=moderator)
    (undo,) = WebhookDelivery.objects.exclude(pk__in=decided)
    assert undo.payload["data"]["undo"]["decision_ids"] == [decision.pk]
    assert undo.payload["data"]["undo"]["bulk_action_id"] is None
    assert undo.payload["data"]["post"]["status"] == PostStatus.QUEUED


def test_undo_of_an_appeal_overturn_is_refused_with_the_reason(moderator):
    """The platform told the author the appeal's outcome: undoing the decision behind it would
    leave the post and the appeal saying different things."""
    reviewer = UserFactory(username="reviewer", role="moderator")
    post = PostFactory()
    decision_record(post=post, moderator=moderator, label="spam", reason_code="scam")
    appeal, _ = appeal_submit(source=post.source, post_external_id=post.external_id, statement="mine")
    appeal_resolve(appeal=appeal, moderator=reviewer, outcome="overturn", reason_code="legitimate")
    overturn = Decision.objects.filter(post=post).latest("pk")
    assert not decision_can_undo(decision=overturn, user=reviewer)
    with pytest.raises(Conflict) as exc:
        decision_undo(decision=overturn, moderator=reviewer)
    assert exc.value.code == "appealed" and f"Appeal #{appeal.pk} was resolved" in exc.value.message
    post.refresh_from_db()
    appeal.refresh_from_db()
    assert post.status == PostStatus.APPROVED and appeal.status == AppealStatus.OVERTURNED
    html = client_for(reviewer).get(reverse("dashboard:post_detail", args=[post.pk])).content.decode()
    assert "data-undo-decision" not in html and "data-undo-blocked" in html


def test_undo_of_an_appealed_decision_is_refused_and_bulk_undo_skips_it(moderator):
    post = PostFactory()
    decision = decision_record(post=post, moderator=moderator, label="spam", reason_code="scam")
    appeal, _ = appeal_submit(source=post.source, post_external_id=post.external_id, statement="mine")
    with pytest.raises(Conflict) as exc:
        decision_undo(decision=decision, moderator=moderator)
    assert exc.value.code == "appealed" and f"appeal #{appeal.pk}" in exc.value.message
    other = PostFactory()
    bulk = bulk_decide(moderator=moderator, label="spam", post_ids=[post.pk, other.pk])
    appeal_resolve(appeal=appeal, moderator=UserFactory(username="r2", role="moderator"), outcome="uphold")
    bulk_undo(bulk=bulk, moderator=moderator)
    post.refresh_from_db()
    other.refresh_from_db()
    assert post.status == PostStatus.REMOVED and other.status == PostStatus.QUEUED
    assert AuditLog.objects.get(action="bulk.undo").after["skipped"] == [str(post.pk)]


def test_deciding_on_the_post_page_goes_to_the_next_post_with_an_undo(mod_client, moderator):
    decided = PostFactory(final_score=0.99, priority=10.0)
    held = PostFactory(final_score=0.98, priority=9.0)
    following = PostFactory(final_score=0.5, priority=5.0)
    type(held).objects.filter(pk=held.pk).update(
        claimed_by=UserFactory(username="peer", role="moderator"), claimed_until=timezone.now() + timedelta(minutes=5)
    )
    response = mod_client.post(
        reverse("dashboard:decide", args=[decided.pk]), {"label": "spam", "reason_code": "scam"}, follow=True
    )
    # On to the next post nobody else holds; the decided one's Undo rides along in the message.
    assert response.redirect_chain[-1][0] == reverse("dashboard:post_detail", args=[following.pk])
    decision = Decision.objects.get(post=decided)
    html = response.content.decode()
    assert reverse("dashboard:decision_undo", args=[decision.pk]) in html and "data-undo" in html


def test_a_post_decided_by_a_bulk_action_offers_that_actions_undo(mod_client, moderator):
    posts = [PostFactory(), PostFactory()]
    bulk = bulk_decide(moderator=moderator, label="spam", post_ids=[p.pk for p in posts])
    html = mod_client.get(reverse("dashboard:post_detail", args=[posts[0].pk])).content.decode()
    assert reverse("dashboard:bulk_undo", args=[bulk.pk]) in html and "data-undo-bulk" in html
    other = client_for(UserFactory(username="o4", role="moderator"))
    assert "data-undo-bulk" not in other.get(reverse("dashboard:post_detail", args=[posts[0].pk])).content.decode()
