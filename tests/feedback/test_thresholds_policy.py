"""The threshold what-if and the training evaluation count what the pipeline does: the same
policy function as live scoring, escalation and reports included."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from django.utils import timezone

from feedback.services.evaluation import classification_metrics
from feedback.services.thresholds import Outcomes, whatif
from moderation.models import Author, Post
from scoring.models import Action, Score
from scoring.services.policy import policy_active, policy_create_version, policy_decide

pytestmark = pytest.mark.django_db


def _scored(source, name: str, *, final: float, reports: int = 0, revisions: tuple[dict, ...] = ({},)) -> Post:
    author, _ = Author.objects.get_or_create(source=source, external_id="a")
    post = Post.objects.create(
        source=source, external_id=name, author=author, text=name, report_count=reports, created_at=timezone.now()
    )
    for revision, subs in enumerate(revisions):
        Score.objects.create(
            post=post,
            model_set="m",
            revision=revision,
            final_score=final,
            action="queue",
            text_score=subs.get("text", 0.1),
            preview_score=subs.get("preview"),
            link_score=subs.get("link", 0.1),
            behaviour_score=subs.get("behaviour", 0.1),
        )
    Post.objects.filter(pk=post.pk).update(final_score=final)
    post.final_score = final
    return post


def _live_counts(posts: list[Post]) -> dict[str, int]:
    policy = policy_active()
    actions: Counter[Action] = Counter()
    for post in posts:
        latest = Score.objects.filter(post=post).order_by("-created_at", "-id").first()
        assert latest is not None and post.final_score is not None
        subs = (latest.text_score, latest.preview_score, latest.link_score, latest.behaviour_score)
        actions[
            policy_decide(policy=policy, final_score=post.final_score, report_count=post.report_count, sub_scores=subs)
        ] += 1
    return {
        "total": len(posts),
        "remove": actions[Action.REMOVE],
        "queue": actions[Action.QUEUE],
        "approve": actions[Action.APPROVE],
    }


def _posts(source) -> list[Post]:
    return [
        _scored(source, "plain-ham", final=0.05),
        _scored(source, "confident-link", final=0.05, revisions=({"link": 0.95},)),
        _scored(source, "confident-preview", final=0.1, revisions=({"preview": 0.93},)),
        _scored(source, "reported", final=0.05, reports=1),
        _scored(source, "spam", final=0.97),
        _scored(source, "unsure", final=0.5),
        # Only the latest score counts, as on the post: an old confident revision does not escalate.
        _scored(source, "rescored", final=0.05, revisions=({"behaviour": 0.99}, {"behaviour": 0.2})),
    ]


def test_whatif_counts_match_live_scoring_escalation_included(source):
    posts = _posts(source)
    policy = policy_active()
    assert policy.escalate_threshold == 0.9

    result = whatif(remove_threshold=policy.remove_threshold, approve_threshold=policy.approve_threshold)

    expected = {"total": 7, "remove": 1, "queue": 4, "approve": 2}
    assert _live_counts(posts) == expected
    for side in ("proposed", "active"):
        assert {k: result[side][k] for k in expected} == expected
    assert result["proposed"]["escalate_threshold"] == 0.9


def test_whatif_proposal_keeps_the_active_escalate_threshold(source):
    posts = _posts(source)
    policy_create_version(remove_threshold=0.9, approve_threshold=0.2, escalate_threshold=1.0)  # escalation off

    result = whatif(remove_threshold=0.9, approve_threshold=0.3)

    assert _live_counts(posts) == {"total": 7, "remove": 1, "queue": 2, "approve": 4}
    assert {k: result["active"][k] for k in ("remove", "queue", "approve")} == {"remove": 1, "queue": 2, "approve": 4}
    assert result["proposed"]["escalate_threshold"] == 1.0
    assert {k: result["proposed"][k] for k in ("remove", "queue", "approve")} == {"remove": 1, "queue": 2, "approve": 4}


def test_whatif_reviewed_spam_let_through_follows_the_policy(source):
    policy_active()
    outcomes = Outcomes(
        scores=np.asarray([0.05, 0.05, 0.05, 0.05]),
        labels=np.asarray([1, 1, 1, 0]),
        scope="test",
        report_counts=np.asarray([0.0, 0.0, 2.0, 0.0]),
        strongest_sub_scores=np.asarray([0.1, 0.95, 0.1, 0.1]),
    )
    at_approve = whatif(remove_threshold=0.9, approve_threshold=0.2, outcomes=outcomes)["proposed"]["at_approve"]
    # Of three spam posts only the unreported, unescalated one would be auto-approved.
    assert at_approve["spam_approved"] == 1 and at_approve["approved"] == 2
    assert at_approve["spam_below"] == pytest.approx(1 / 3)


def test_training_evaluation_counts_approvals_like_the_policy():
    labels = [1, 1, 1, 0, 0]
    final = [0.05, 0.05, 0.05, 0.05, 0.95]
    metrics = classification_metrics(
        labels,
        final,
        remove_threshold=0.9,
        approve_threshold=0.2,
        escalate_threshold=0.9,
        report_counts=[0, 0, 3, 0, 0],
        strongest_sub_scores=[0.1, 0.92, 0.1, 0.1, 0.99],
    )
    assert metrics["at_approve"]["approved"] == 2
    assert metrics["at_approve"]["spam_approved"] == 1
    assert metrics["at_approve"]["spam_miss_rate"] == pytest.approx(1 / 3)
    # Without the policy's other inputs every low score is an approval (a sub-model on its own).
    bare = classification_metrics(labels, final, remove_threshold=0.9, approve_threshold=0.2)
    assert bare["at_approve"]["approved"] == 4 and bare["at_approve"]["spam_approved"] == 3


def test_whatif_says_unknown_where_no_reviewed_post_lies_beyond_the_threshold(source):
    _posts(source)
    policy_active()  # remove >= 0.9, approve < 0.2
    # Every reviewed post scores below 0.7: nothing is measured at or above it.
    outcomes = Outcomes(
        scores=np.asarray([0.1, 0.3, 0.6, 0.65]),
        labels=np.asarray([0, 0, 1, 1]),
        scope="test",
        report_counts=np.zeros(4),
        strongest_sub_scores=np.zeros(4),
    )
    result = whatif(remove_threshold=0.5, approve_threshold=0.2, outcomes=outcomes)
    assert result["proposed"]["at_remove"]["known"] is True  # 0.6 and 0.65 were reviewed
    result = whatif(remove_threshold=0.7, approve_threshold=0.2, outcomes=outcomes)
    at_remove = result["proposed"]["at_remove"]
    assert at_remove["known"] is False and at_remove["precision"] is None and at_remove["fpr"] is None
    # Against the active policy (remove >= 0.9), moving to 0.7 changes nothing of these posts;
    # moving to 0.4 auto-removes the 0.5 one instead of queueing it.
    assert result["changed"] == 0
    assert whatif(remove_threshold=0.4, approve_threshold=0.2, outcomes=outcomes)["changed"] == 1
