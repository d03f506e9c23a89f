"""Reason codes belong to outcomes: every form offers only the reasons of its label or outcome,
and the services refuse the others with a message that names both, keeping the form's state."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.errors import ApplicationError
from moderation.models import Appeal, AppealStatus, Author, BulkAction, ListStatus, PostStatus
from moderation.services.appeals import appeal_resolve, appeal_submit
from moderation.services.decisions import decision_record
from moderation.services.enforcement import EnforcementReason, author_suspend, list_entry_set
from tests.dashboard.dashboard_factories import AuthorFactory, DomainFactory, PostFactory, UserFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403
from tests.dashboard.dashboard_fixtures import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def appealed_scam(moderator) -> Appeal:
    post = PostFactory()
    decision_record(post=post, moderator=moderator, label="spam", reason_code="scam")
    appeal, _ = appeal_submit(source=post.source, post_external_id=post.external_id, statement="mine")
    return appeal


def test_upholding_a_scam_removal_with_a_not_spam_reason_is_refused(appealed_scam):
    reviewer = UserFactory(username="reviewer", role="moderator")
    with pytest.raises(ApplicationError) as exc:
        appeal_resolve(appeal=appealed_scam, moderator=reviewer, outcome="uphold", reason_code="legitimate")
    assert exc.value.code == "invalid_reason_code"
    assert exc.value.message == (
        "“Legitimate content” is a reason for not spam; upholding this removal needs a spam reason."
    )
    appealed_scam.refresh_from_db()
    assert appealed_scam.status == AppealStatus.PENDING
    with pytest.raises(ApplicationError, match="overturning this removal needs a not spam reason"):
        appeal_resolve(appeal=appealed_scam, moderator=reviewer, outcome="overturn", reason_code="scam")
    appeal_resolve(appeal=appealed_scam, moderator=reviewer, outcome="uphold", reason_code="scam")
    appealed_scam.refresh_from_db()
    assert appealed_scam.status == AppealStatus.UPHELD


def test_the_appeal_form_keeps_the_outcome_and_tags_reasons_by_outcome(appealed_scam):
    reviewer = client_for(UserFactory(username="reviewer", role="moderator"))
    url = reverse("dashboard:appeal", args=[appealed_scam.pk])
    html = reviewer.get(url).content.decode()
    # Upholding a removal takes spam reasons, overturning it not-spam ones (the page's JS filters).
    assert 'value="uphold" required data-reason-label="spam"' in html
    assert 'value="overturn" required data-reason-label="ham"' in html
    assert 'value="legitimate" data-label="ham"' in html
    response = reviewer.post(url, {"outcome": "uphold", "reason_code": "legitimate", "note": "kept"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "is a reason for not spam; upholding this removal needs a spam reason" in html
    assert 'value="uphold" required data-reason-label="spam" checked' in html
    assert 'value="legitimate" data-label="ham" selected' in html and "kept</textarea>" in html
    appealed_scam.refresh_from_db()
    assert appealed_scam.status == AppealStatus.PENDING


def test_enforcement_offers_and_accepts_only_the_actions_reasons(mod_client, moderator):
    author = AuthorFactory()
    url = reverse("dashboard:enforce", args=["author", author.pk, "suspend"])
    html = mod_client.get(url).content.decode()
    assert 'value="bot-activity"' in html and 'value="legitimate"' not in html
    response = mod_client.post(url, {"reason_code": "legitimate", "next": "/dashboard/"})
    assert response.status_code == 400  # not one of the form's choices
    with pytest.raises(ApplicationError) as exc:
        author_suspend(author=author, actor=moderator, reason=EnforcementReason("legitimate"))
    assert exc.value.fields["reason_code"] == [
        "“Legitimate content” is a reason for not spam; a suspension needs a spam reason."
    ]
    assert Author.objects.get(pk=author.pk).suspended_at is None
    # Lifting a block takes a not-spam reason; the form for it offers only those.
    domain = DomainFactory()
    list_entry_set(row=domain, status=ListStatus.BLOCK, actor=moderator, reason=EnforcementReason("phishing"))
    html = mod_client.get(reverse("dashboard:enforce", args=["domain", domain.pk, "unblock"])).content.decode()
    assert 'value="false-report"' in html and 'value="phishing"' not in html
    with pytest.raises(ApplicationError) as exc:
        list_entry_set(row=domain, status=ListStatus.UNKNOWN, actor=moderator, reason=EnforcementReason("malware"))
    assert "lifting a block needs a not spam reason" in exc.value.fields["reason_code"][0]


def test_the_bulk_bar_has_one_reason_list_per_label_and_the_server_refuses_a_mismatch(mod_client):
    post = PostFactory()
    html = mod_client.get(reverse("dashboard:queue")).content.decode()
    spam_list = html[html.index('name="reason_code_spam"') : html.index('name="label" value="spam"')]
    ham_list = html[html.index('name="reason_code_ham"') : html.index('name="label" value="ham"')]
    assert 'value="scam"' in spam_list and 'value="legitimate"' not in spam_list
    assert 'value="legitimate"' in ham_list and 'value="scam"' not in ham_list
    form = {"post_ids": [post.pk], "label": "spam", "reason_code_spam": "legitimate", "next": "/dashboard/"}
    response = mod_client.post(reverse("dashboard:bulk"), form, follow=True)
    assert "marking a post spam needs a spam reason" in response.content.decode()
    assert not BulkAction.objects.exists()
    form["reason_code_spam"] = "scam"
    mod_client.post(reverse("dashboard:bulk"), form)
    post.refresh_from_db()
    assert post.status == PostStatus.REMOVED and post.decisions.get().reason_code == "scam"
