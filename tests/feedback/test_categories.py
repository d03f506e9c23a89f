"""Policy categories in the feedback loop: a decision trains only the models of its category.
The spam model's data (datasets, replay, threshold tuning: all built from effective_examples)
holds spam labels and clean negatives, never a harassment removal."""

from __future__ import annotations

import pytest

from feedback.models import LabelledExample
from feedback.selectors import effective_examples
from feedback.services.datasets import dataset_snapshot
from moderation.categories import category_for_report_reason
from moderation.models import ReasonCode
from moderation.services.bulk import bulk_decide
from moderation.services.decisions import decision_record
from tests.feedback.conftest import decide, make_post

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def reason_codes(db):
    # The seeded codes (moderation 0002, categories by 0023), recreated after a flushed database.
    for code, applies_to, category in (
        ("commercial-spam", "spam", "spam"),
        ("phishing", "spam", "scam"),
        ("abuse", "spam", "abuse"),
        ("legitimate", "ham", "none"),
    ):
        ReasonCode.objects.update_or_create(
            code=code, defaults={"label": code, "applies_to": applies_to, "category": category, "is_active": True}
        )


def test_a_harassment_removal_never_reaches_the_spam_models_data(source, moderator):
    spam = make_post(source, text="Buy cheap pills", spammy=True)
    scam = make_post(source, text="Verify your bank login here", spammy=True)
    harassment = make_post(source, text="You worthless idiot, disappear")
    fine = make_post(source, text="Lovely photo")
    decision_record(post=spam, moderator=moderator, label="spam", reason_code="commercial-spam")
    decision_record(post=scam, moderator=moderator, label="spam", reason_code="phishing")
    removed = decision_record(post=harassment, moderator=moderator, label="spam", reason_code="abuse")
    decision_record(post=fine, moderator=moderator, label="ham", reason_code="legitimate")
    assert removed.category == "abuse"
    assert LabelledExample.objects.get(decision_id=removed.pk).category == "abuse"

    spam_data = {e.post_id: (e.label, e.category) for e in effective_examples()}
    assert spam_data == {spam.pk: ("spam", "spam"), scam.pk: ("spam", "scam"), fine.pk: ("ham", "none")}
    assert {e.post_id for e in effective_examples(categories=None)} == {spam.pk, scam.pk, harassment.pk, fine.pk}
    assert {e.post_id for e in effective_examples(categories=["abuse", "none"])} == {harassment.pk, fine.pk}

    dataset = dataset_snapshot(created_by=moderator)
    assert set(dataset.members.values_list("example__post_id", flat=True)) == {spam.pk, scam.pk, fine.pk}
    assert (dataset.spam_count, dataset.ham_count) == (2, 1)


def test_a_later_harassment_decision_takes_the_post_out_not_its_older_spam_label(source, moderator):
    post = make_post(source, text="You idiot, buy my pills")
    decide(post, moderator, "spam", "commercial-spam")
    assert [e.post_id for e in effective_examples()] == [post.pk]
    decide(post, moderator, "spam", "abuse")  # the moderator corrects the category
    assert effective_examples() == []


def test_a_bulk_decision_carries_its_reasons_category(source, moderator):
    posts = [make_post(source, text=f"you idiot {i}") for i in range(3)]
    bulk = bulk_decide(moderator=moderator, label="spam", reason_code="abuse", post_ids=[p.pk for p in posts])
    assert set(bulk.decisions.values_list("category", flat=True)) == {"abuse"}
    assert effective_examples() == []


def test_a_decision_without_a_reason_code_takes_its_labels_category(source, moderator):
    post = make_post(source)
    decision = decide(post, moderator, "ham")
    assert decision.category == "none"


@pytest.mark.parametrize(
    ("reason", "category"),
    [("spam", "spam"), ("Harassment", "abuse"), ("hate-speech", "hate"), ("phishing", "scam"), ("weird", "other")],
)
def test_report_reasons_map_to_categories(reason, category):
    assert category_for_report_reason(reason) == category
