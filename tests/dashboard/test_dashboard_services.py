from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core.errors import ApplicationError, Conflict, InvalidTransition
from dashboard.selectors.queue import QueueFilters, queue_queryset
from moderation.models import AuditLog, Decision, ListStatus, PostStatus
from moderation.services.bulk import Cluster, bulk_decide, bulk_undo, cluster_preview_count
from moderation.services.claims import claim_next, claim_post, claim_release, post_claim_state
from moderation.services.decisions import decision_record
from moderation.services.enforcement import EnforcementReason, author_suspend, list_entry_set
from moderation.signals import decision_recorded
from tests.dashboard.dashboard_factories import AuthorFactory, DomainFactory, LinkFactory, PostFactory, UserFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403

pytestmark = pytest.mark.django_db


def test_decision_moves_status_audits_and_signals(moderator):
    post = PostFactory()
    received = []

    def handler(sender, decision, post, **kwargs):
        received.append((decision.pk, post.status))

    decision_recorded.connect(handler)
    try:
        d = decision_record(post=post, moderator=moderator, label="spam", reason_code="phishing", note="n")
    finally:
        decision_recorded.disconnect(handler)
    post.refresh_from_db()
    assert post.status == PostStatus.REMOVED
    assert received == [(d.pk, PostStatus.REMOVED)]
    entry = AuditLog.objects.get(action="post.decide")
    assert entry.before == {"status": "queued"}
    assert entry.after["status"] == "removed" and entry.actor == moderator
    post.author.refresh_from_db()
    assert post.author.spam_count == 1
    assert post.link is not None
    post.link.domain.refresh_from_db()
    assert post.link.domain.spam_count == 1


def test_decision_reversal_is_append_only_and_adjusts_counters(moderator):
    post = PostFactory()
    decision_record(post=post, moderator=moderator, label="spam", reason_code="scam")
    with pytest.raises(Conflict) as exc:
        decision_record(post=post, moderator=moderator, label="ham", reason_code="legitimate")
    assert exc.value.code == "already_decided"
    decision_record(post=post, moderator=moderator, label="ham", reason_code="legitimate", override=True)
    assert Decision.objects.filter(post=post).count() == 2
    post.refresh_from_db()
    post.author.refresh_from_db()
    assert post.status == PostStatus.APPROVED
    assert post.author.spam_count == 0


def test_decision_rejects_reason_of_other_label(moderator):
    with pytest.raises(ApplicationError):
        decision_record(post=PostFactory(), moderator=moderator, label="ham", reason_code="phishing")


def test_decision_invalid_transition(moderator):
    # Unscored posts may be decided; the state machine forbids only unknown moves.
    post = PostFactory(status=PostStatus.REMOVED)
    decision_record(post=post, moderator=moderator, label="ham")  # removed -> approved is fine
    from moderation.services.decisions import post_set_status

    with pytest.raises(InvalidTransition):
        post_set_status(post=post, status=PostStatus.QUEUED)


def test_claims_keep_items_listed_for_others_and_expire(moderator):
    other = UserFactory(username="other", role="moderator")
    post = PostFactory(final_score=0.9)
    assert claim_post(post=post, user=moderator)
    assert not claim_post(post=post, user=other)
    # The queue lists it for everyone; who holds it, and until when, is for the page to show.
    assert list(queue_queryset(filters=QueueFilters())) == [post]
    state = post_claim_state(post=post, user=other)
    assert state is not None and state.holder == moderator and not state.mine
    mine = post_claim_state(post=post, user=moderator)
    assert mine is not None and mine.mine
    type(post).objects.filter(pk=post.pk).update(claimed_until=timezone.now() - timedelta(seconds=1))
    assert claim_post(post=post, user=other)
    claim_release(post=post, user=other)
    post.refresh_from_db()
    assert post.claimed_by is None and post_claim_state(post=post, user=other) is None


def test_claim_next_takes_riskiest_unclaimed(moderator):
    other = UserFactory(username="other2", role="moderator")
    top = PostFactory(final_score=0.99)
    second = PostFactory(final_score=0.8)
    assert claim_next(user=moderator, base_queryset=queue_queryset(filters=QueueFilters())) == top
    assert claim_next(user=other, base_queryset=queue_queryset(filters=QueueFilters())) == second


def test_bulk_cluster_and_undo(moderator):
    author = AuthorFactory()
    posts = [PostFactory(author=author) for _ in range(3)]
    PostFactory()  # someone else's
    cluster = Cluster(kind="author", value=author.pk)
    assert cluster_preview_count(cluster=cluster) == 3
    bulk = bulk_decide(moderator=moderator, label="spam", reason_code="scam", cluster=cluster)
    assert len(bulk.previous_statuses) == 3
    assert all(p.status == PostStatus.REMOVED for p in type(posts[0]).objects.filter(author=author))
    author.refresh_from_db()
    assert author.spam_count == 3
    # One post decided again after the bulk action: undo leaves it alone.
    decision_record(post=posts[0], moderator=moderator, label="ham", reason_code="legitimate", override=True)
    bulk_undo(bulk=bulk, moderator=moderator)
    statuses = dict(type(posts[0]).objects.filter(author=author).values_list("pk", "status"))
    assert statuses[posts[0].pk] == PostStatus.APPROVED
    assert statuses[posts[1].pk] == statuses[posts[2].pk] == PostStatus.QUEUED
    author.refresh_from_db()
    assert author.spam_count == 0
    assert Decision.objects.filter(bulk_action=bulk, undone_at__isnull=False).count() == 2
    assert AuditLog.objects.filter(action="bulk.undo").exists()
    with pytest.raises(Conflict):
        bulk_undo(bulk=bulk, moderator=moderator)


def test_bulk_undo_window_expires(moderator, settings):
    settings.DASHBOARD_UNDO_SECONDS = 0
    post = PostFactory()
    bulk = bulk_decide(moderator=moderator, label="spam", post_ids=[post.pk])
    with pytest.raises(Conflict):
        bulk_undo(bulk=bulk, moderator=moderator)


def test_bulk_empty_selection(moderator):
    with pytest.raises(ApplicationError):
        bulk_decide(moderator=moderator, label="spam", post_ids=[])


def test_enforcement_is_audited(moderator):
    domain = DomainFactory()
    list_entry_set(
        row=domain, status=ListStatus.BLOCK, actor=moderator, reason=EnforcementReason("phishing", "phishing kit")
    )
    assert domain.status == ListStatus.BLOCK
    list_entry_set(row=domain, status=ListStatus.UNKNOWN, actor=moderator, reason=EnforcementReason())
    entries = list(AuditLog.objects.filter(target_type="domain").order_by("id"))
    assert [e.action for e in entries] == ["domain.block", "domain.unblock"]
    assert entries[0].after["reason_code"] == "phishing" and entries[0].after["reason"] == "phishing kit"
    assert entries[0].before["status"] == "unknown" and entries[0].after["status"] == "block"
    assert entries[0].actor == moderator
    link = LinkFactory()
    post = PostFactory(link=link)
    assert post.ip is not None
    list_entry_set(row=post.ip, status=ListStatus.BLOCK, actor=moderator, reason=EnforcementReason("scam"))
    author_suspend(author=post.author, actor=moderator, reason=EnforcementReason("bot-activity", "bot"))
    post.author.refresh_from_db()
    assert post.author.suspended_at is not None
    assert AuditLog.objects.filter(action="author.suspend", target_id=str(post.author.pk)).exists()


def test_grant_role_command():
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from moderation.permissions import Role, user_roles

    call_command("grant_role", "newadmin", "admin", "--create", "--password", "x-long-password-1")
    user = User.objects.get(username="newadmin")
    assert user.is_staff and user_roles(user) == frozenset(Role)
    call_command("grant_role", "newadmin", "admin", "--revoke")
    user = User.objects.get(username="newadmin")
    assert not user.is_staff and user_roles(user) == frozenset()
