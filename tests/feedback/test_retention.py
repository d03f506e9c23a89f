"""Labelled examples past their source's post retention (feedback.services.retention): deleted,
or anonymised where a dataset version still holds them; applied at a later `now`."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from feedback.models import DatasetMember, LabelledExample
from feedback.selectors import effective_examples
from feedback.services.datasets import dataset_snapshot
from feedback.services.retention import retention_apply
from feedback.tasks import apply_retention_task
from moderation.models import Post
from scoring.services.retention import retention_apply as rows_retention_apply
from tests.feedback.conftest import decide, make_post


def test_examples_in_a_dataset_are_anonymised_the_others_deleted(source, moderator, admin_user):
    source.retention_days_posts = 30
    source.save(update_fields=["retention_days_posts"])
    kept_post = make_post(source, author="alice", text="win a free prize", spammy=True)
    decide(kept_post, moderator, "spam")
    dataset = dataset_snapshot(created_by=admin_user)
    loose_post = make_post(source, author="bob", text="lunch at noon")
    decide(loose_post, moderator, "ham")
    kept = LabelledExample.objects.get(post=kept_post)
    loose = LabelledExample.objects.get(post=loose_post)
    assert DatasetMember.objects.filter(dataset=dataset, example=kept).exists()

    apply_retention_task.apply()  # the beat task on the real clock: nothing is 30 days old
    assert LabelledExample.objects.filter(pk__in=[kept.pk, loose.pk]).count() == 2

    later = timezone.now() + timedelta(days=31)
    rows_retention_apply(now=later)  # the posts go first, as the hourly tasks do
    first = retention_apply(now=later)
    second = retention_apply(now=later)

    assert not Post.objects.filter(pk__in=[kept_post.pk, loose_post.pk]).exists()
    assert first[source.slug] == {"deleted": 1, "anonymised": 1}
    assert second[source.slug] == {"deleted": 0, "anonymised": 0}
    assert not LabelledExample.objects.filter(pk=loose.pk).exists()
    after = LabelledExample.objects.get(pk=kept.pk)
    assert (after.author_external_id, after.url) == ("", "")
    assert after.post_external_id == f"expired-{kept_post.pk}"
    assert "alice" not in str(LabelledExample.objects.filter(pk=kept.pk).values().get())
    # What the dataset needs stays: text, features, label, and its place in the dataset.
    assert (after.text, after.label, after.features) == (kept.text, kept.label, kept.features)
    assert DatasetMember.objects.filter(dataset=dataset, example=after).exists()
    assert [e.pk for e in effective_examples(sources=[source.slug])] == [kept.pk]


def test_the_database_still_refuses_any_other_change_to_an_example(source, moderator):
    post = make_post(source, author="carol")
    decide(post, moderator, "spam")
    rows = LabelledExample.objects.filter(post=post)
    for change in (
        {"label": "ham"},
        {"author_external_id": ""},  # part of an anonymisation only
        {"author_external_id": "", "url": "", "post_external_id": "expired-1", "text": "rewritten"},
    ):
        with pytest.raises(IntegrityError, match="immutable"), transaction.atomic():
            rows.update(**change)
    assert rows.get().author_external_id == "carol"
