"""Enforcement that means something: reasons and expiry, audit, the platform webhook, what a
suspension, a trust entry and a subdomain block do to scoring, and the dashboard form."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from core.urls import registrable_domain
from moderation.links import link_get_or_create
from moderation.models import AuditLog, ListStatus, Post, PostStatus
from moderation.services.enforcement import (
    EnforcementReason,
    EnforcementRefused,
    author_allowlist,
    author_suspend,
    author_unsuspend,
    list_entry_set,
)
from scoring.models import Action, Score, WebhookDelivery
from scoring.services.scoring import score_posts
from tests.dashboard.dashboard_fixtures import *  # noqa: F403
from tests.scoring.pipeline_support import FakeClient, make_author, make_ip, make_link, make_post, make_source

pytestmark = pytest.mark.django_db

HOOK = {"callback_url": "https://hooks.example.com/moderation", "webhook_secret": "s3cret"}


def _score(post: Post, client: FakeClient | None = None) -> Post:
    score_posts(post_ids=[post.pk], client=client or FakeClient())
    post.refresh_from_db()
    return post


@pytest.mark.parametrize(
    ("host", "registrable"),
    [
        ("login.paypa1-secure.example", "paypa1-secure.example"),
        ("a.b.paypa1-secure.example", "paypa1-secure.example"),
        ("paypa1-secure.example", "paypa1-secure.example"),
        ("login.evil.xyz", "evil.xyz"),
        ("a.b.example.co.uk", "example.co.uk"),
        ("localhost", "localhost"),
    ],
)
def test_registrable_domain_for_known_and_unknown_suffixes(host, registrable):
    assert registrable_domain(f"https://{host}/x") == registrable


def test_a_block_covers_every_subdomain_under_an_unknown_suffix(moderator):
    link = link_get_or_create(url="https://login.paypa1-secure.example/verify")
    assert link.domain.name == "paypa1-secure.example"
    list_entry_set(row=link.domain, status=ListStatus.BLOCK, actor=moderator, reason=EnforcementReason("phishing"))
    post = make_post(text="hi", link=link)
    client = FakeClient()
    assert _score(post, client).status == PostStatus.AUTO_REMOVED
    assert client.calls == []  # decided by the block, no model call


def test_an_expired_block_stops_applying(moderator):
    link = make_link(domain="expired-block.example")
    until = timezone.now() + timedelta(hours=1)
    list_entry_set(
        row=link.domain, status=ListStatus.BLOCK, actor=moderator, reason=EnforcementReason("scam", until=until)
    )
    type(link.domain).objects.filter(pk=link.domain.pk).update(status_until=timezone.now() - timedelta(seconds=1))
    assert _score(make_post(text="hi", link=link)).status == PostStatus.AUTO_APPROVED


def test_a_suspended_authors_post_is_never_auto_approved(moderator):
    author = make_author(make_source(**HOOK))
    author_suspend(author=author, actor=moderator, reason=EnforcementReason("bot-activity", "signup burst"))
    post = _score(make_post(author=author, text="hello"))  # scores 0.05: would be auto-approved
    assert post.status == PostStatus.QUEUED
    score = Score.objects.get(post=post)
    assert score.action == Action.QUEUE and score.features["enforcement"] == "author suspended: held for review"


def test_a_source_may_remove_suspended_authors_posts(moderator, settings):
    settings.SUSPENDED_AUTHOR_POSTS = "queue"
    author = make_author(make_source(suspended_author_posts="remove"))
    author_suspend(author=author, actor=moderator, reason=EnforcementReason("bot-activity"))
    assert _score(make_post(author=author, text="maybe")).status == PostStatus.AUTO_REMOVED


def test_the_setting_decides_when_the_source_does_not(moderator, settings):
    settings.SUSPENDED_AUTHOR_POSTS = "remove"
    author = make_author(make_source())
    author_suspend(author=author, actor=moderator, reason=EnforcementReason("bot-activity"))
    assert _score(make_post(author=author, text="hello")).status == PostStatus.AUTO_REMOVED


def test_an_expired_suspension_and_a_lifted_one_stop_applying(moderator):
    author = make_author(make_source())
    author_suspend(
        author=author,
        actor=moderator,
        reason=EnforcementReason("bot-activity", until=timezone.now() + timedelta(minutes=5)),
    )
    type(author).objects.filter(pk=author.pk).update(suspended_until=timezone.now() - timedelta(seconds=1))
    assert _score(make_post(author=author, text="hello")).status == PostStatus.AUTO_APPROVED
    other = make_author(make_source())
    author_suspend(author=other, actor=moderator, reason=EnforcementReason("bot-activity"))
    author_unsuspend(author=other, actor=moderator, reason=EnforcementReason(note="appeal accepted"))
    assert _score(make_post(author=other, text="hello")).status == PostStatus.AUTO_APPROVED


def test_a_trusted_author_is_queued_not_removed_but_still_approved_when_clean(moderator):
    author = make_author(make_source())
    author_allowlist(author=author, actor=moderator, reason=EnforcementReason("legitimate"))
    assert _score(make_post(author=author, text="spam spam")).status == PostStatus.QUEUED  # 0.95: a strong signal
    assert _score(make_post(author=author, text="hello")).status == PostStatus.AUTO_APPROVED


def test_a_trusted_domain_is_queued_not_removed_but_a_block_still_removes(moderator):
    trusted = make_link(domain="trusted-news.example")
    list_entry_set(
        row=trusted.domain, status=ListStatus.ALLOW, actor=moderator, reason=EnforcementReason("trusted-link")
    )
    assert _score(make_post(text="spam offer", link=trusted)).status == PostStatus.QUEUED
    author = make_author(make_source())
    author_allowlist(author=author, actor=moderator, reason=EnforcementReason("legitimate"))
    blocked = make_link(domain="blocked-kit.example")
    list_entry_set(row=blocked.domain, status=ListStatus.BLOCK, actor=moderator, reason=EnforcementReason("phishing"))
    assert _score(make_post(author=author, text="hi", link=blocked)).status == PostStatus.AUTO_REMOVED


def test_suspension_needs_a_reason_and_a_future_expiry(moderator):
    author = make_author(make_source())
    with pytest.raises(EnforcementRefused) as missing:
        author_suspend(author=author, actor=moderator, reason=EnforcementReason())
    assert "reason_code" in missing.value.fields
    with pytest.raises(EnforcementRefused) as past:
        author_suspend(
            author=author, actor=moderator, reason=EnforcementReason("scam", until=timezone.now() - timedelta(hours=1))
        )
    assert "expires_at" in past.value.fields
    author.refresh_from_db()
    assert author.suspended_at is None and not AuditLog.objects.filter(action="author.suspend").exists()


def test_enforcement_is_audited_and_sent_to_the_platform_signed(moderator, django_capture_on_commit_callbacks):
    source = make_source(**HOOK)
    quiet = make_source()
    author = make_author(source)
    until = timezone.now() + timedelta(days=7)
    with django_capture_on_commit_callbacks():
        author_suspend(author=author, actor=moderator, reason=EnforcementReason("bot-activity", "burst", until))
    entry = AuditLog.objects.get(action="author.suspend")
    assert entry.after["suspended_reason_code"] == "bot-activity" and entry.after["suspended_reason"] == "burst"
    assert entry.after["suspended_until"] == until.isoformat() and entry.actor == moderator
    (delivery,) = WebhookDelivery.objects.filter(event_type="enforcement")
    assert delivery.source == source and delivery.post is None
    data = delivery.payload["data"]
    assert data["target"] == {"type": "author", "external_id": author.external_id}
    assert data["action"] == "suspend" and data["reason_code"] == "bot-activity" and data["note"] == "burst"
    assert data["expires_at"] == until.isoformat()
    # A global domain block tells every platform with a callback, and only those.
    domain = make_link(domain="kit.example").domain
    list_entry_set(row=domain, status=ListStatus.BLOCK, actor=moderator, reason=EnforcementReason("phishing"))
    sent = WebhookDelivery.objects.filter(event_type="enforcement", payload__data__target__type="domain")
    assert [d.source_id for d in sent] == [source.pk] and quiet.pk != source.pk


def test_the_enforcement_form_replaces_the_confirm(mod_client):
    author = make_author(make_source())
    url = reverse("dashboard:enforce", args=["author", author.pk, "suspend"])
    page = mod_client.get(url, {"next": "/dashboard/"})
    body = page.content.decode()
    assert page.status_code == 200
    assert 'name="reason_code"' in body and 'name="note"' in body and 'name="expires_at"' in body
    refused = mod_client.post(url, {"note": "no code"})
    assert refused.status_code == 400 and "This field is required" in refused.content.decode()
    author.refresh_from_db()
    assert author.suspended_at is None
    done = mod_client.post(
        url, {"reason_code": "bot-activity", "note": "burst", "expires_at": "2999-01-01T10:00", "next": "/dashboard/"}
    )
    assert done.status_code == 302 and done["Location"] == "/dashboard/"
    author.refresh_from_db()
    assert author.suspended_at is not None and author.suspended_reason == "burst"
    assert author.suspended_until is not None and author.suspended_until.year == 2999
    hostile = mod_client.get(url, {"next": "javascript:alert(1)"}).content.decode()
    assert "javascript:" not in hostile


def test_the_enforcement_form_lifts_without_a_reason(mod_client, moderator):
    domain = make_link(domain="lift-me.example").domain
    list_entry_set(row=domain, status=ListStatus.BLOCK, actor=moderator, reason=EnforcementReason("phishing"))
    response = mod_client.post(reverse("dashboard:enforce", args=["domain", domain.pk, "unblock"]), {})
    assert response.status_code == 302
    domain.refresh_from_db()
    assert domain.status == ListStatus.UNKNOWN and domain.status_until is None


def test_the_post_page_links_to_the_forms_and_no_confirm_is_left(mod_client):
    post = make_post(text="hi", link=make_link(domain="page-links.example"), ip=make_ip("192.0.2.44"))
    page = mod_client.get(reverse("dashboard:post_detail", args=[post.pk])).content.decode()
    for action in ('data-enforce="suspend"', 'data-enforce="block-domain"', 'data-enforce="allow-domain"'):
        assert action in page
    assert 'data-enforce="block-ip"' in page and 'data-enforce="allow-ip"' in page
    assert "data-confirm=" not in page
    assert reverse("dashboard:author", args=[post.author_id]) in page


def _queries(client, url) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_the_author_and_appeals_pages_cost_the_same_queries_for_more_rows(mod_client, moderator):
    from moderation.services.appeals import appeal_submit
    from moderation.services.decisions import decision_record

    source = make_source()
    author = make_author(source, email_domain="mail.example")
    shared = make_ip("192.0.2.50")

    def grow(n: int) -> None:
        for _ in range(n):
            post = make_post(author=author, text="x", link=make_link(), ip=shared)
            make_post(author=make_author(source, email_domain="mail.example"), text="y", ip=shared)
            decision_record(post=post, moderator=moderator, label="spam", reason_code="scam", note="n")
            appeal_submit(source=source, post_external_id=post.external_id, statement="s")

    grow(2)
    author_url, appeals_url = reverse("dashboard:author", args=[author.pk]), reverse("dashboard:appeals")
    few = (_queries(mod_client, author_url), _queries(mod_client, appeals_url))
    grow(6)
    assert (_queries(mod_client, author_url), _queries(mod_client, appeals_url)) == few
