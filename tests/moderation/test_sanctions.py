"""Warnings, the strike ledger, the ladder, hide and limit restrictions: each takes a reason, is
audited, reaches the platform as a signed event, writes a statement of reasons when it restricts,
and can be reversed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from moderation.models import (
    AuditLog,
    LadderAction,
    LadderRule,
    Restriction,
    RestrictionKind,
    StatementOfReasons,
    Strike,
)
from moderation.services.decisions import decision_record, decision_undo
from moderation.services.enforcement import EnforcementReason, EnforcementRefused, author_unsuspend
from moderation.services.ladder import ladder_rule_delete, ladder_rule_save
from moderation.services.sanctions import author_limit, post_hide, restriction_lift
from moderation.services.strikes import author_warn, strike_revoke
from scoring.models import WebhookDelivery
from tests.dashboard.dashboard_fixtures import *  # noqa: F403
from tests.scoring.pipeline_support import make_author, make_post, make_source

pytestmark = pytest.mark.django_db

HOOK = {"callback_url": "https://hooks.example.com/moderation", "webhook_secret": "s3cret"}


def _events(source, event_type):
    rows = WebhookDelivery.objects.filter(source=source, event_type=event_type).order_by("pk")
    return [row.payload["data"] for row in rows]


def _ladder(source, *, strikes=3, action=LadderAction.SUSPEND, duration_days=7, category="spam"):
    return LadderRule.objects.create(
        source=source, category=category, strikes=strikes, window_days=30, action=action, duration_days=duration_days
    )


def test_a_warning_records_a_strike_in_the_reasons_category_audited_and_sent(moderator):
    source = make_source(**HOOK)
    author = make_author(source)
    post = make_post(author=author)
    warned = author_warn(author=author, actor=moderator, reason=EnforcementReason("phishing", "fake bank"), post=post)
    strike = warned.strike
    assert (strike.category, strike.post_id, strike.issued_by) == ("scam", post.pk, moderator)
    assert strike.expires_at > timezone.now() + timedelta(days=89)
    assert warned.escalated is None
    assert AuditLog.objects.filter(action="author.warn", actor=moderator, target_id=str(author.pk)).exists()
    (event,) = _events(source, "enforcement")
    assert event["action"] == "warn" and event["reason_code"] == "phishing"
    assert event["strike"]["category"] == "scam" and event["post_external_id"] == post.external_id
    assert not StatementOfReasons.objects.exists()  # a warning alone restricts nothing


def test_a_warning_needs_a_reason(moderator):
    author = make_author(make_source())
    with pytest.raises(EnforcementRefused):
        author_warn(author=author, actor=moderator, reason=EnforcementReason(""))
    assert not Strike.objects.exists()


def test_the_third_strike_suspends_with_a_statement_of_reasons(moderator):
    source = make_source(**HOOK)
    author = make_author(source)
    _ladder(source)
    for _ in range(2):
        assert (
            author_warn(author=author, actor=moderator, reason=EnforcementReason("commercial-spam")).escalated is None
        )
    author.refresh_from_db()
    assert author.suspended_at is None
    third = author_warn(author=author, actor=moderator, reason=EnforcementReason("repetitive"))
    author.refresh_from_db()
    assert third.escalated is not None and author.suspended_at is not None
    assert author.suspended_until is not None and author.suspended_until > timezone.now() + timedelta(days=6)
    applied = AuditLog.objects.get(action="ladder.applied")
    assert applied.actor is None and applied.after["action"] == "suspend" and len(applied.after["strikes"]) == 3
    statement = StatementOfReasons.objects.get(author=author)
    assert statement.action == "suspension" and statement.automated
    assert statement.fields["decision_account"] == "DECISION_ACCOUNT_SUSPENDED"
    assert statement.fields["automated_decision"] == "AUTOMATED_DECISION_PARTIALLY"
    (sent,) = _events(source, "statement_of_reasons")
    assert sent["statement"]["id"] == statement.pk
    assert sent["statement"]["dsa"]["decision_ground"] == "DECISION_GROUND_INCOMPATIBLE_CONTENT"
    # a fourth strike while suspended imposes nothing more
    assert author_warn(author=author, actor=moderator, reason=EnforcementReason("repetitive")).escalated is None
    assert StatementOfReasons.objects.count() == 1
    # lifting the suspension marks its statement reversed
    author_unsuspend(author=author, actor=moderator)
    statement.refresh_from_db()
    assert statement.reversed_at is not None


def test_strikes_of_another_category_revoked_or_expired_do_not_count(moderator):
    source = make_source()
    author = make_author(source)
    _ladder(source, strikes=2)
    author_warn(author=author, actor=moderator, reason=EnforcementReason("abuse"))  # abuse, not spam
    first = author_warn(author=author, actor=moderator, reason=EnforcementReason("commercial-spam")).strike
    strike_revoke(strike=first, actor=moderator, reason=EnforcementReason(note="wrong author"))
    assert AuditLog.objects.filter(action="author.unwarn").exists()
    expired = author_warn(author=author, actor=moderator, reason=EnforcementReason("commercial-spam")).strike
    Strike.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    author_warn(author=author, actor=moderator, reason=EnforcementReason("commercial-spam"))
    author.refresh_from_db()
    assert author.suspended_at is None
    author_warn(author=author, actor=moderator, reason=EnforcementReason("commercial-spam"))
    author.refresh_from_db()
    assert author.suspended_at is not None


def test_another_sources_ladder_does_not_apply(moderator):
    mine, other = make_source(), make_source()
    _ladder(other, strikes=1)
    author = make_author(mine)
    author_warn(author=author, actor=moderator, reason=EnforcementReason("commercial-spam"))
    author.refresh_from_db()
    assert author.suspended_at is None


def test_the_ladder_can_limit_before_it_suspends(moderator):
    source = make_source()
    author = make_author(source)
    _ladder(source, strikes=1, action=LadderAction.LIMIT_RATE)
    _ladder(source, strikes=2, action=LadderAction.SUSPEND)
    limited = author_warn(author=author, actor=moderator, reason=EnforcementReason("commercial-spam")).escalated
    assert isinstance(limited, Restriction) and limited.kind == RestrictionKind.LIMIT_RATE
    assert StatementOfReasons.objects.get(restriction=limited).action == "limit_rate"
    author_warn(author=author, actor=moderator, reason=EnforcementReason("commercial-spam"))
    author.refresh_from_db()
    assert author.suspended_at is not None


def test_hide_pending_review_and_lift(moderator):
    source = make_source(**HOOK)
    post = make_post(source=source)
    until = timezone.now() + timedelta(days=2)
    hidden = post_hide(post=post, actor=moderator, reason=EnforcementReason("abuse", "reported insult", until))
    assert (hidden.kind, hidden.category, hidden.post_id) == ("hide", "abuse", post.pk)
    statement = StatementOfReasons.objects.get(restriction=hidden)
    assert statement.fields["decision_visibility"] == ["DECISION_VISIBILITY_CONTENT_DISABLED"]
    assert statement.fields["end_date_visibility_restriction"] == until.date().isoformat()
    assert statement.fields["automated_decision"] == "AUTOMATED_DECISION_NOT_AUTOMATED"
    with pytest.raises(EnforcementRefused):
        post_hide(post=post, actor=moderator, reason=EnforcementReason("abuse"))
    restriction_lift(restriction=hidden, actor=moderator)
    hidden.refresh_from_db()
    statement.refresh_from_db()
    assert hidden.lifted_at is not None and statement.reversed_at is not None
    actions = [e["action"] for e in _events(source, "enforcement")]
    assert actions == ["hide", "unhide"]
    assert [a.action for a in AuditLog.objects.order_by("pk")] == ["restriction.hide", "restriction.unhide"]


def test_limit_reach(moderator):
    author = make_author(make_source(**HOOK))
    limited = author_limit(
        author=author, actor=moderator, kind=RestrictionKind.LIMIT_REACH, reason=EnforcementReason("bot-activity")
    )
    statement = StatementOfReasons.objects.get(restriction=limited)
    assert statement.fields["decision_visibility"] == ["DECISION_VISIBILITY_CONTENT_DEMOTED"]
    assert statement.fields["puid"] == f"{author.source.slug}:author:{author.external_id}"
    with pytest.raises(EnforcementRefused):
        author_limit(author=author, actor=moderator, kind="hide", reason=EnforcementReason("bot-activity"))


def test_a_removal_has_a_statement_and_its_undo_reverses_it(moderator, settings):
    settings.DSA_TERMS_URL = "https://chirp.example/terms"
    source = make_source(**HOOK)
    post = make_post(source=source, report_count=2, final_score=0.7)
    decision = decision_record(post=post, moderator=moderator, label="spam", reason_code="scam", note="fake shop")
    statement = decision.statement
    assert statement.action == "removal" and statement.category == "scam" and not statement.automated
    assert statement.fields["source_type"] == "SOURCE_ARTICLE_16"
    assert statement.fields["automated_detection"] == "Yes"
    assert statement.fields["decision_ground_reference_url"] == "https://chirp.example/terms"
    assert _events(source, "statement_of_reasons")[0]["statement"]["decision_id"] == decision.pk
    decision_undo(decision=decision, moderator=moderator)
    statement.refresh_from_db()
    assert statement.reversed_at is not None


def test_an_approval_writes_no_statement(moderator):
    post = make_post()
    decision_record(post=post, moderator=moderator, label="ham")
    assert not StatementOfReasons.objects.exists()


def test_a_decision_ends_the_hiding_it_waited_for_and_a_removed_post_is_not_hidden(moderator):
    source = make_source(**HOOK)
    post = make_post(source=source, status="auto_approved")
    hidden = post_hide(post=post, actor=moderator, reason=EnforcementReason("abuse"))
    decision_record(post=post, moderator=moderator, label="ham", reason_code="legitimate")
    hidden.refresh_from_db()
    assert hidden.lifted_at is not None
    assert [e["action"] for e in _events(source, "enforcement")] == ["hide", "unhide"]
    removed = make_post(source=source, status="auto_removed")
    with pytest.raises(EnforcementRefused):
        post_hide(post=removed, actor=moderator, reason=EnforcementReason("abuse"))


def test_ladder_rule_changes_are_audited(admin_user):
    source = make_source()
    rule = ladder_rule_save(
        rule=LadderRule(source=source, category="abuse", strikes=2, action=LadderAction.LIMIT_REACH), actor=admin_user
    )
    rule.strikes = 3
    ladder_rule_save(rule=rule, actor=admin_user)
    ladder_rule_delete(rule=rule, actor=admin_user)
    saved, changed, deleted = AuditLog.objects.filter(action__startswith="ladder.rule").order_by("pk")
    assert (saved.before, saved.after["strikes"]) == ({}, 2)
    assert (changed.before["strikes"], changed.after["strikes"]) == (2, 3)
    assert deleted.action == "ladder.rule_deleted" and deleted.actor == admin_user
    assert not LadderRule.objects.exists()


def test_the_admin_role_may_edit_the_ladder():
    from django.contrib.auth.models import Group

    codenames = set(Group.objects.get(name="admin").permissions.values_list("codename", flat=True))
    assert {"add_ladderrule", "change_ladderrule", "delete_ladderrule"} <= codenames
    assert "change_ladderrule" not in set(
        Group.objects.get(name="moderator").permissions.values_list("codename", flat=True)
    )
