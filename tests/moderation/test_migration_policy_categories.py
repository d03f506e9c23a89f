"""The data migrations that give existing labels a category: spam -> spam, not spam -> none,
and a removal under the seeded "abuse" reason -> abuse (it was never spam)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.utils import timezone

from tests.migration_support import migrate_to, schema_at

BEFORE = [
    ("moderation", "0025_source_abuse_thresholds_post_abuse_score"),
    ("feedback", "0008_examples_anonymisable_by_retention"),
]
AFTER = [("moderation", "0026_policy_categories"), ("feedback", "0009_labelled_example_category")]


@pytest.fixture
def old_schema(transactional_db: None) -> Iterator[Any]:
    yield from schema_at(BEFORE)


def test_existing_labels_get_their_categories(old_schema: Any) -> None:
    get = old_schema.get_model
    for code, applies_to in (
        ("commercial-spam", "spam"),
        ("phishing", "spam"),
        ("abuse", "spam"),
        ("legitimate", "ham"),
    ):
        get("moderation", "ReasonCode").objects.update_or_create(
            code=code, defaults={"label": code, "applies_to": applies_to}
        )
    user = get("auth", "User").objects.create(username="mod-migration")
    source = get("moderation", "Source").objects.create(name="Mig", slug="mig")
    author = get("moderation", "Author").objects.create(source=source, external_id="a")
    decisions = {}
    for n, (label, reason) in enumerate(
        [("spam", "commercial-spam"), ("spam", "abuse"), ("ham", "legitimate"), ("spam", ""), ("spam", "phishing")]
    ):
        post = get("moderation", "Post").objects.create(
            source=source, author=author, external_id=f"p{n}", created_at=timezone.now()
        )
        decisions[(label, reason)] = get("moderation", "Decision").objects.create(
            post=post, moderator=user, label=label, reason_code=reason
        )
        get("feedback", "LabelledExample").objects.create(
            decision_id=decisions[(label, reason)].pk,
            post_id=post.pk,
            source_slug="mig",
            label=label,
            reason_code=reason,
            decided_at=timezone.now(),
        )
        get("moderation", "Report").objects.create(
            post=post, reporter_id=f"r{n}", reason=["spam", "harassment", "odd", "Hate", "phishing"][n]
        )

    migrate_to(AFTER)

    from feedback.models import LabelledExample
    from moderation.models import Decision, ReasonCode, Report

    expected = {
        ("spam", "commercial-spam"): "spam",
        ("spam", "abuse"): "abuse",
        ("ham", "legitimate"): "none",
        ("spam", ""): "spam",
        ("spam", "phishing"): "scam",
    }
    for key, category in expected.items():
        assert Decision.objects.get(pk=decisions[key].pk).category == category, key
        assert LabelledExample.objects.get(decision_id=decisions[key].pk).category == category, key
    assert dict(
        ReasonCode.objects.filter(code__in=["abuse", "legitimate", "commercial-spam"]).values_list("code", "category")
    ) == {
        "abuse": "abuse",
        "legitimate": "none",
        "commercial-spam": "spam",
    }
    assert sorted(Report.objects.filter(post__source__slug="mig").values_list("category", flat=True)) == sorted(
        ["spam", "abuse", "other", "hate", "scam"]
    )
    # The rows stay immutable after the migration filled their category.
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        LabelledExample.objects.filter(source_slug="mig").update(category="other")
