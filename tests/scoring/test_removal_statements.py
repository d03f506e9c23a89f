"""Automatic removals get their statement of reasons after the scoring batch commits, once."""

from __future__ import annotations

import pytest

from moderation.models import PostStatus, StatementOfReasons
from scoring.models import WebhookDelivery
from scoring.services.scoring import score_posts
from scoring.tasks import record_removal_statements
from tests.scoring.pipeline_support import FakeClient, make_post, make_source

pytestmark = pytest.mark.django_db


def test_an_automatic_removal_publishes_its_statement_after_commit(django_capture_on_commit_callbacks, monkeypatch):
    source = make_source(callback_url="https://hooks.example.com/m", webhook_secret="s3cret")
    spam = make_post(source=source, text="spam")
    fine = make_post(source=source, text="hello")
    published: list[list[int]] = []
    categories: list[str] = []

    def delay(post_ids: list[int], category: str) -> None:
        published.append(post_ids)
        categories.append(category)

    monkeypatch.setattr("scoring.tasks.record_removal_statements.delay", delay)
    monkeypatch.setattr("scoring.tasks.deliver_webhook.delay", lambda delivery_id: None)
    with django_capture_on_commit_callbacks(execute=True):
        score_posts(post_ids=[spam.pk, fine.pk], client=FakeClient())
    spam.refresh_from_db()
    assert spam.status == PostStatus.AUTO_REMOVED
    assert published == [[spam.pk]] and categories == ["spam"]  # the spam policy removed it
    assert not StatementOfReasons.objects.exists()  # nothing inside the scoring transaction

    assert record_removal_statements(published[0]) == 1
    assert record_removal_statements(published[0]) == 0  # a re-run writes no second statement
    statement = StatementOfReasons.objects.get(post=spam)
    assert statement.automated and statement.decision_id is None
    assert statement.fields["automated_decision"] == "AUTOMATED_DECISION_FULLY"
    assert statement.fields["automated_detection"] == "Yes"
    assert "removed automatically" in statement.fields["decision_facts"]
    event = WebhookDelivery.objects.get(event_type="statement_of_reasons")
    assert event.payload["data"]["statement"]["post_external_id"] == spam.external_id


def test_a_post_no_longer_auto_removed_gets_none():
    post = make_post(text="spam", status=PostStatus.APPROVED)
    assert record_removal_statements([post.pk]) == 0


def test_an_abuse_removal_states_the_abuse_category():
    post = make_post(text="you idiot", status=PostStatus.AUTO_REMOVED)
    assert record_removal_statements([post.pk], "abuse") == 1
    statement = StatementOfReasons.objects.get(post=post)
    assert statement.category == "abuse"
    assert statement.fields["category"] == "STATEMENT_CATEGORY_ILLEGAL_OR_HARMFUL_SPEECH"
    assert "Abuse detected automatically" in statement.fields["decision_facts"]
