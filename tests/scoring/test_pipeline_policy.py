from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from core.errors import ApplicationError
from moderation.models import AuditLog
from scoring.models import Action, DecisionPolicy
from scoring.services.policy import policy_active, policy_create_version, policy_decide

pytestmark = pytest.mark.django_db


def test_default_policy_v1_comes_from_the_migration():
    policy = policy_active()
    assert (policy.version, policy.remove_threshold, policy.approve_threshold) == (1, 0.9, 0.2)


@pytest.mark.parametrize(
    ("final", "reports", "action"),
    [
        (0.95, 0, Action.REMOVE),
        (0.90, 0, Action.REMOVE),
        (0.95, 3, Action.REMOVE),
        (0.5, 0, Action.QUEUE),
        (0.2, 0, Action.QUEUE),
        (0.19, 0, Action.APPROVE),
        (0.01, 1, Action.QUEUE),  # reported posts are never auto-approved
    ],
)
def test_thresholds(final, reports, action):
    assert policy_decide(policy=policy_active(), final_score=final, report_count=reports) == action


@pytest.mark.parametrize(
    ("sub_scores", "action"),
    [
        ((0.05, None, 0.96, 0.04), Action.QUEUE),  # a confident link model outvoted by the fusion tree
        ((0.95, None, 0.1, 0.1), Action.QUEUE),
        ((0.05, None, 0.89, 0.2), Action.APPROVE),
        ((), Action.APPROVE),
    ],
)
def test_a_confident_sub_model_is_never_auto_approved(sub_scores, action):
    policy = policy_active()
    assert policy.escalate_threshold == 0.9
    assert policy_decide(policy=policy, final_score=0.01, report_count=0, sub_scores=sub_scores) == action


def test_escalation_at_one_is_off_and_edits_keep_it_unless_given():
    policy = policy_create_version(remove_threshold=0.9, approve_threshold=0.2, escalate_threshold=1.0)
    assert policy_decide(policy=policy, final_score=0.01, report_count=0, sub_scores=(1.0,)) == Action.APPROVE
    kept = policy_create_version(remove_threshold=0.8, approve_threshold=0.1)  # e.g. the calibration page
    assert kept.escalate_threshold == 1.0
    with pytest.raises(ApplicationError):
        policy_create_version(remove_threshold=0.9, approve_threshold=0.2, escalate_threshold=1.5)


def test_an_edit_creates_a_new_audited_active_version():
    user = User.objects.create_user("admin")
    old = policy_active()
    new = policy_create_version(remove_threshold=0.8, approve_threshold=0.1, note="stricter", actor=user)
    old.refresh_from_db()
    assert new.version == old.version + 1
    assert new.is_active and not old.is_active
    assert policy_active() == new
    assert DecisionPolicy.objects.count() == 2
    log = AuditLog.objects.get(action="scoring.policy_version_created")
    assert log.actor == user
    assert log.before["remove_threshold"] == 0.9
    assert log.after["remove_threshold"] == 0.8


@pytest.mark.parametrize(("remove", "approve"), [(0.5, 0.6), (1.5, 0.1), (0.9, -0.1)])
def test_invalid_thresholds_are_refused(remove, approve):
    with pytest.raises(ApplicationError):
        policy_create_version(remove_threshold=remove, approve_threshold=approve)
    assert policy_active().version == 1


@pytest.mark.django_db
def test_the_batch_policy_is_the_live_policy():
    """policy_actions (what-if, training evaluation) and policy_decide (live scoring) agree on
    every combination, thresholds and ties included."""
    import itertools

    import numpy as np

    from scoring.services.policy import policy_actions

    policy = DecisionPolicy(remove_threshold=0.9, approve_threshold=0.2, escalate_threshold=0.9)
    grid = list(itertools.product([0.0, 0.19, 0.2, 0.5, 0.9, 1.0], [0, 1], [None, 0.0, 0.89, 0.9, 1.0]))
    batch = policy_actions(
        policy=policy,
        final_scores=np.asarray([f for f, _, _ in grid]),
        report_counts=np.asarray([r for _, r, _ in grid]),
        strongest_sub_scores=np.asarray([0.0 if s is None else s for _, _, s in grid]),
    )
    live = [policy_decide(policy=policy, final_score=f, report_count=r, sub_scores=[s]) for f, r, s in grid]
    assert list(batch) == live
    assert set(live) == {Action.REMOVE, Action.QUEUE, Action.APPROVE}


def test_the_scoring_batchs_actions_are_policy_decides():
    """decide takes a whole batch's actions in one policy_actions call (policy_batch_actions): per post it
    is policy_decide on the final score, the reports and the strongest sub-score, and a
    short-circuited post is removed whatever its score."""
    import itertools

    from scoring.features.extract import PostFeatures
    from scoring.services.decide import Item, policy_batch_actions
    from scoring.serving import ScoringOutput

    policy = DecisionPolicy(remove_threshold=0.9, approve_threshold=0.2, escalate_threshold=0.9)
    features = PostFeatures(link={}, behaviour={}, text="", preview_text="")
    grid = list(itertools.product([0.0, 0.19, 0.2, 0.5, 0.9], [0, 2], [None, 0.3, 0.95]))
    items = [
        Item(
            post=None,  # type: ignore[arg-type]  # policy_batch_actions reads the output only
            features=features,
            output=ScoringOutput(text_prob=0.1, preview_prob=p, link_prob=0.1, behaviour_prob=0.1, final_prob=f),
        )
        for f, _, p in grid
    ]
    blocked = Item(post=None, features=features, reason="domain blocked")  # type: ignore[arg-type]  # as above
    got = policy_batch_actions([*items, blocked], policy, [r for _, r, _ in grid] + [0])
    want = [
        policy_decide(policy=policy, final_score=f, report_count=r, sub_scores=(0.1, p, 0.1, 0.1)) for f, r, p in grid
    ]
    assert got == [*want, Action.REMOVE]
    assert set(want) == {Action.REMOVE, Action.QUEUE, Action.APPROVE}


@pytest.mark.parametrize(
    ("final", "unvalidated", "action"),
    [
        (0.01, False, Action.APPROVE),
        (0.01, True, Action.QUEUE),  # would be approved: a human looks instead
        (0.5, True, Action.QUEUE),
        (0.95, True, Action.REMOVE),  # the language never blocks a removal
    ],
)
def test_a_post_in_an_unvalidated_language_is_never_auto_approved(final, unvalidated, action):
    policy = policy_active()
    assert policy_decide(policy=policy, final_score=final, report_count=0, language_unvalidated=unvalidated) == action


@pytest.mark.parametrize(
    ("language", "source_action", "reason"),
    [
        ("en", "queue", ""),
        ("und", "queue", ""),  # undetermined: the detector was not sure, the score decides
        ("", "queue", ""),  # stored before detection existed
        ("es", "queue", "language not validated: es"),
        ("es", "score", ""),  # this source chose to act on the score alone
    ],
)
def test_language_routing_reason_follows_the_validated_languages_and_the_source(language, source_action, reason):
    from moderation.models import Post, Source
    from scoring.services.policy import language_routing_reason

    post = Post(language=language, source=Source(unvalidated_language_action=source_action))
    assert language_routing_reason(post) == reason


def test_validated_languages_come_from_settings(settings):
    from moderation.models import Post, Source
    from scoring.services.policy import language_routing_reason

    settings.TEXT_VALIDATED_LANGUAGES = ["en", "es"]
    assert language_routing_reason(Post(language="es", source=Source())) == ""
    assert language_routing_reason(Post(language="pt", source=Source())) == "language not validated: pt"


@pytest.mark.parametrize(
    ("final", "subs", "unfamiliar", "action"),
    [
        # (text, preview, link, behaviour)
        (0.05, (0.05, None, 0.1, 0.1), False, Action.APPROVE),
        (0.05, (0.05, None, 0.1, 0.1), True, Action.QUEUE),  # never approved on its text alone
        (0.97, (0.99, None, 0.1, 0.1), False, Action.REMOVE),
        (0.97, (0.99, None, 0.1, 0.1), True, Action.QUEUE),  # nor removed on its text alone
        (0.97, (0.99, None, 0.95, 0.1), True, Action.REMOVE),  # the link alone would remove it
        (0.97, (0.99, None, 0.1, 0.92), True, Action.REMOVE),  # so would the behaviour alone
        (0.97, (0.99, 0.93, 0.1, 0.1), True, Action.REMOVE),  # or the linked page's text
        (0.5, (0.5, None, 0.1, 0.1), True, Action.QUEUE),
    ],
)
def test_an_unfamiliar_post_is_never_decided_on_its_text_alone(final, subs, unfamiliar, action):
    policy = policy_create_version(remove_threshold=0.9, approve_threshold=0.2, escalate_threshold=1.0)
    decided = policy_decide(policy=policy, final_score=final, report_count=0, sub_scores=subs, unfamiliar=unfamiliar)
    assert decided == action


@pytest.mark.parametrize(
    ("unfamiliarity", "source_action", "reason"),
    [
        (None, "queue", ""),  # no familiarity reference published
        (0.4, "queue", ""),
        (0.999, "queue", ""),
        (1.0, "queue", "unfamiliar text (1.0 x the limit)"),
        (2.46, "queue", "unfamiliar text (2.5 x the limit)"),
        (2.46, "score", ""),  # this source chose to act on the score alone
    ],
)
def test_familiarity_routing_reason_follows_the_measure_and_the_source(unfamiliarity, source_action, reason):
    from moderation.models import Post, Source
    from scoring.services.policy import familiarity_routing_reason

    post = Post(source=Source(unfamiliar_text_action=source_action))
    assert familiarity_routing_reason(post, unfamiliarity) == reason
