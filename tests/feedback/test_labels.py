from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction

from feedback.models import ImmutableRowError, LabelledExample
from feedback.selectors import effective_examples
from feedback.services.labels import labels_backfill
from moderation.models import Decision
from tests.feedback.conftest import decide, make_post, make_user

pytestmark = pytest.mark.django_db


def test_decision_creates_frozen_example(source, moderator):
    post = make_post(source, text="Buy cheap pills", spammy=True)
    decision = decide(post, moderator, "spam", "spam-commercial")
    example = LabelledExample.objects.get(decision_id=decision.pk)
    score = post.scores.get()
    assert example.label == "spam"
    assert example.text == "Buy cheap pills"
    assert example.score_id == score.pk
    assert example.features == score.features and example.features["behaviour"]["report_count"] >= 1
    assert example.sub_scores == {"text": score.text_score, "link": 0.8, "behaviour": 0.7}
    assert example.final_score == score.final_score
    assert example.model_versions == {"text": 1, "link": 1, "behaviour": 1, "fusion": 1}
    assert example.decided_by_username == "mod"
    assert example.author_external_id == post.author.external_id
    assert not example.decided_by_admin


def test_later_edits_do_not_change_example(source, moderator):
    post = make_post(source, text="original text", spammy=True)
    decide(post, moderator, "spam")
    post.text = "edited text"
    post.save(update_fields=["text"])
    post.author.external_id = "renamed"
    post.author.save(update_fields=["external_id"])
    score = post.scores.get()
    frozen = dict(score.features)
    score.features = {"behaviour": {"report_count": 99.0}}
    score.save(update_fields=["features"])
    example = LabelledExample.objects.get(post_id=post.pk)
    assert example.text == "original text"
    assert example.features == frozen
    assert example.author_external_id != "renamed"


def test_examples_cannot_be_updated(source, moderator):
    post = make_post(source)
    decide(post, moderator, "ham")
    example = LabelledExample.objects.get(post_id=post.pk)
    example.label = "spam"
    with pytest.raises(ImmutableRowError):
        example.save()
    with pytest.raises(IntegrityError), transaction.atomic():  # the database refuses too
        LabelledExample.objects.filter(pk=example.pk).update(label="spam")
    assert LabelledExample.objects.get(pk=example.pk).label == "ham"


def test_conflict_rule_latest_wins_admin_overrides_undone_dropped(source, moderator, admin_user):
    other_mod = make_user("mod2", "moderator")
    p1, p2, p3 = make_post(source), make_post(source), make_post(source)
    # p1: two moderators disagree -> the latest wins.
    decide(p1, moderator, "spam")
    decide(p1, other_mod, "ham")
    # p2: an admin said spam, a moderator later said ham -> the admin wins.
    decide(p2, admin_user, "spam")
    decide(p2, moderator, "ham")
    # p3: the latest decision was undone -> the earlier one stands.
    decide(p3, moderator, "ham")
    undone = decide(p3, moderator, "spam")
    Decision.objects.filter(pk=undone.pk).update(undone_at=undone.created_at + timedelta(seconds=5))
    by_post = {e.post_id: e.label for e in effective_examples()}
    assert by_post == {p1.pk: "ham", p2.pk: "spam", p3.pk: "ham"}
    assert LabelledExample.objects.count() == 6  # every decision stays recorded


def test_backfill_is_idempotent(source, moderator):
    post = make_post(source)
    decision = Decision.objects.create(post=post, moderator=moderator, label="spam")  # no signal sent
    assert labels_backfill() == 1
    assert labels_backfill() == 0
    assert LabelledExample.objects.get().decision_id == decision.pk


def test_bulk_decisions_are_labelled_and_bulk_undo_drops_them(source, moderator):
    from moderation.services.bulk import bulk_decide, bulk_undo

    posts = [make_post(source, author=f"bulk-{i}") for i in range(3)]
    decide(posts[0], moderator, "ham")  # an earlier single decision on the first post
    bulk = bulk_decide(moderator=moderator, label="spam", post_ids=[p.pk for p in posts])
    assert LabelledExample.objects.filter(decision__bulk_action=bulk).count() == 3
    assert {e.post_id: e.label for e in effective_examples()} == {p.pk: "spam" for p in posts}
    bulk_undo(bulk=bulk, moderator=moderator)
    # Undone decisions stop counting; the earlier single decision stands again.
    assert {e.post_id: e.label for e in effective_examples()} == {posts[0].pk: "ham"}
    assert LabelledExample.objects.count() == 4  # nothing was deleted or rewritten


def test_decision_before_scoring_is_labelled_without_features(source, moderator):
    post = make_post(source, with_score=False, text="not scored yet")
    decide(post, moderator, "spam")
    example = LabelledExample.objects.get(post_id=post.pk)
    assert example.features == {} and example.final_score is None and example.score_id is None
    assert example.text == "not scored yet"
