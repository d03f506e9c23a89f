"""The decision step (scoring.services.decide.decide) as a table: every branch of the policy,
the short-circuit, enforcement, language and familiarity routing, the abuse rule, the earned
approval, a decided campaign's rule and the status transitions, on rows built in memory. No database: these tests
carry no django_db mark, and a query would fail them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from moderation.models import Author, Campaign, Domain, Label, Link, ListStatus, Post, PostStatus, Source
from scoring.features.extract import PostFeatures
from scoring.models import Action, DecisionPolicy
from scoring.services.campaigns import CAMPAIGN_SPAM_REASON
from scoring.services.decide import ALREADY_SCORED, MODEL_ERROR, NOT_PENDING, OWNED, Item, decide
from scoring.triton_types import ScoringOutput

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(days=1)
EARLIER = NOW - timedelta(days=1)
POLICY = DecisionPolicy(version=1, remove_threshold=0.9, approve_threshold=0.2, escalate_threshold=0.9)
RECEIVED = frozenset({PostStatus.RECEIVED})
RESCORE = frozenset({PostStatus.QUEUED, PostStatus.AUTO_APPROVED})
Q_ONLY = frozenset({PostStatus.QUEUED})  # the waiting queue's re-score


@dataclass
class Case:
    """One row of the table: the post as loaded, the model's answer, what decide must say."""

    final: float | None = 0.5  # None: short-circuited by a block list
    sub: float = 0.1  # every sub-score
    reports: int = 0  # on the locked row
    feature_reports: float = 0.0  # as the features saw them
    language: str = "en"
    language_action: str = "queue"  # the source's unvalidated_language_action
    suspended_posts: str = ""  # the source's suspended_author_posts
    author: dict[str, Any] = field(default_factory=dict)  # Author fields
    domain: dict[str, Any] | None = None  # Domain fields; None: no link
    current: str | None = PostStatus.RECEIVED  # None: the post is gone
    allowed: frozenset[str] = RECEIVED
    model_error: str = ""
    written_before: bool = False
    owned: bool | None = None  # a moderator holds the row; None: the pass did not ask
    policy: DecisionPolicy = POLICY
    unfamiliarity: float | None = None  # the pipeline's familiarity measure; None: none
    unfamiliar_action: str = "queue"  # the source's unfamiliar_text_action
    abuse: float | None = None  # the abuse model's probability; None: no abuse model
    abuse_queue: float = 0.5  # the source's abuse thresholds
    abuse_remove: float = 0.9
    campaign: str | None = None  # the post's campaign's decided_label; None: in no campaign
    campaign_action: str = "queue"  # the source's campaign_member_action
    level: float | None = None  # the source's approval_level; None: earned approval off


def item_of(case: Case) -> Item:
    source = Source(
        id=1,
        slug="s",
        unvalidated_language_action=case.language_action,
        suspended_author_posts=case.suspended_posts,
        unfamiliar_text_action=case.unfamiliar_action,
        abuse_queue_threshold=case.abuse_queue,
        abuse_remove_threshold=case.abuse_remove,
        campaign_member_action=case.campaign_action,
        approval_level=case.level or 0.0,
    )
    author = Author(id=1, source=source, external_id="u-1", **case.author)
    link = None
    if case.domain is not None:
        domain = Domain(id=1, name="example.com", **case.domain)
        link = Link(id=1, url="https://example.com/", url_hash="h", host="example.com", domain=domain)
    post = Post(id=7, source=source, author=author, link=link, language=case.language, status=case.current or "")
    if case.campaign is not None:
        post.campaign = Campaign(id=3, source=source, decided_label=case.campaign)
    features = PostFeatures(link={}, behaviour={"report_count": case.feature_reports}, text="", preview_text="")
    if case.final is None:
        return Item(post=post, features=features, reason="blocked domain example.com")
    output = ScoringOutput(
        text_prob=case.sub,
        preview_prob=case.sub,
        link_prob=case.sub,
        behaviour_prob=case.sub,
        final_prob=case.final,
        model_versions={"spam_pipeline": "1"},
        unfamiliarity=case.unfamiliarity,
        abuse_prob=case.abuse,
    )
    return Item(post=post, features=features, output=output, model_error=case.model_error)


def decided(case: Case) -> tuple[str, Action | None, str, bool, bool, str, str]:
    item = item_of(case)
    rows: dict[int, dict[str, Any]] = (
        {} if case.current is None else {7: {"status": case.current, "report_count": case.reports}}
    )
    if case.owned is not None and 7 in rows:
        rows[7]["owned"] = case.owned
    existing = {(7, item.model_set, 0)} if case.written_before else set()
    (decision,) = decide([item], case.policy, NOW, rows=rows, allowed_from=case.allowed, existing=existing)
    return (
        decision.status,
        decision.action,
        decision.skipped,
        decision.status_changed,
        decision.removed_now,
        decision.enforcement,
        decision.routing_reason,
    )


Q, R, A = PostStatus.QUEUED, PostStatus.AUTO_REMOVED, PostStatus.AUTO_APPROVED
SUSPENDED = {"suspended_at": EARLIER}
TRUSTED = {"allowlisted_at": EARLIER}

TABLE = [
    # The thresholds.
    ("approve below approve_threshold", Case(final=0.1), (A, Action.APPROVE, "", True, False, "", "")),
    ("queue at approve_threshold", Case(final=0.2), (Q, Action.QUEUE, "", True, False, "", "")),
    ("queue in between", Case(final=0.5), (Q, Action.QUEUE, "", True, False, "", "")),
    ("remove at remove_threshold", Case(final=0.9), (R, Action.REMOVE, "", True, True, "", "")),
    # What keeps a low score from approval.
    ("a report on the row queues", Case(final=0.1, reports=1), (Q, Action.QUEUE, "", True, False, "", "")),
    (
        "a report the features saw queues",
        Case(final=0.1, feature_reports=2.0),
        (Q, Action.QUEUE, "", True, False, "", ""),
    ),
    ("a strong sub-score escalates", Case(final=0.1, sub=0.95), (Q, Action.QUEUE, "", True, False, "", "")),
    (
        "escalate_threshold 1 escalates nothing",
        Case(
            final=0.1,
            sub=1.0,
            policy=DecisionPolicy(remove_threshold=0.9, approve_threshold=0.2, escalate_threshold=1.0),
        ),
        (A, Action.APPROVE, "", True, False, "", ""),
    ),
    (
        "an unvalidated language queues",
        Case(final=0.1, language="es"),
        (Q, Action.QUEUE, "", True, False, "", "language not validated: es"),
    ),
    (
        "the source may score it anyway",
        Case(final=0.1, language="es", language_action="score"),
        (A, Action.APPROVE, "", True, False, "", ""),
    ),
    ("undetermined is not routed", Case(final=0.1, language="und"), (A, Action.APPROVE, "", True, False, "", "")),
    ("a removal is not routed", Case(final=0.95, language="es"), (R, Action.REMOVE, "", True, True, "", "")),
    # The block-list short-circuit.
    ("a blocked domain removes", Case(final=None), (R, Action.REMOVE, "", True, True, "", "")),
    ("trust does not outrank a block", Case(final=None, author=TRUSTED), (R, Action.REMOVE, "", True, True, "", "")),
    # Enforcement.
    (
        "a suspended author's approval is held",
        Case(final=0.1, author=SUSPENDED),
        (Q, Action.QUEUE, "", True, False, "author suspended: held for review", ""),
    ),
    (
        "a suspended author's queued post stays queued",
        Case(final=0.5, author=SUSPENDED),
        (Q, Action.QUEUE, "", True, False, "", ""),
    ),
    (
        "the source removes suspended authors' posts",
        Case(final=0.1, author=SUSPENDED, suspended_posts="remove"),
        (R, Action.REMOVE, "", True, True, "author suspended: removed", ""),
    ),
    (
        "an expired suspension is over",
        Case(final=0.1, author={**SUSPENDED, "suspended_until": EARLIER}),
        (A, Action.APPROVE, "", True, False, "", ""),
    ),
    (
        "a trusted author is queued, not removed",
        Case(final=0.95, author=TRUSTED),
        (Q, Action.QUEUE, "", True, False, "trusted author: queued instead of removed", ""),
    ),
    (
        "a trusted domain is queued, not removed",
        Case(final=0.95, domain={"status": ListStatus.ALLOW}),
        (Q, Action.QUEUE, "", True, False, "trusted domain example.com: queued instead of removed", ""),
    ),
    (
        "an expired allow-listing is over",
        Case(final=0.95, domain={"status": ListStatus.ALLOW, "status_until": EARLIER}),
        (R, Action.REMOVE, "", True, True, "", ""),
    ),
    (
        "trust does not touch an approval",
        Case(final=0.1, author={**TRUSTED, "allowlisted_until": LATER}),
        (A, Action.APPROVE, "", True, False, "", ""),
    ),
    # Transitions, and what is not written.
    (
        "a re-score keeps the status it lands on",
        Case(final=0.5, current=Q, allowed=RESCORE),
        (Q, Action.QUEUE, "", False, False, "", ""),
    ),
    ("a re-score may remove", Case(final=0.95, current=A, allowed=RESCORE), (R, Action.REMOVE, "", True, True, "", "")),
    (
        "a re-score may queue an approved post",
        Case(final=0.5, current=A, allowed=RESCORE),
        (Q, Action.QUEUE, "", True, False, "", ""),
    ),
    (
        "a decided post is not pending",
        Case(current=PostStatus.REMOVED),
        (PostStatus.REMOVED, None, NOT_PENDING, False, False, "", ""),
    ),
    ("a scored post is not pending for a first score", Case(current=Q), (Q, None, NOT_PENDING, False, False, "", "")),
    ("a gone post is not pending", Case(current=None), ("", None, NOT_PENDING, False, False, "", "")),
    (
        "a model error queues without a score",
        Case(model_error="bad input"),
        (Q, None, MODEL_ERROR, True, False, "", ""),
    ),
    (
        "a written revision is not written again",
        Case(current=Q, allowed=RESCORE, written_before=True),
        (Q, None, ALREADY_SCORED, False, False, "", ""),
    ),
    # The waiting queue's re-score leaves a post a moderator holds to them, whatever its score.
    (
        "a held post is not decided away",
        Case(final=0.95, current=Q, allowed=Q_ONLY, owned=True),
        (Q, None, OWNED, False, False, "", ""),
    ),
    (
        "a held post's model error changes nothing",
        Case(current=Q, allowed=Q_ONLY, owned=True, model_error="bad input"),
        (Q, None, OWNED, False, False, "", ""),
    ),
    (
        "a queued post nobody holds is removed over remove_threshold",
        Case(final=0.95, current=Q, allowed=Q_ONLY, owned=False),
        (R, Action.REMOVE, "", True, True, "", ""),
    ),
    (
        "a queued post is never approved by a re-score",
        Case(final=0.05, current=Q, allowed=Q_ONLY, owned=False),
        (Q, Action.APPROVE, "", False, False, "", ""),
    ),
    (
        "a human decision is not a waiting post",
        Case(final=0.95, current=PostStatus.APPROVED, allowed=Q_ONLY, owned=False),
        (PostStatus.APPROVED, None, NOT_PENDING, False, False, "", ""),
    ),
]


@pytest.mark.parametrize(("case", "want"), [row[1:] for row in TABLE], ids=[row[0] for row in TABLE])
def test_decide(case: Case, want: tuple[Any, ...]) -> None:
    assert decided(case) == want


def test_a_batch_is_decided_in_order_with_one_policy_call() -> None:
    cases = [Case(final=0.1), Case(current=None), Case(final=0.95), Case(model_error="x"), Case(final=0.5)]
    items = [item_of(case) for case in cases]
    for n, item in enumerate(items):
        item.post.id = n
    rows = {n: {"status": PostStatus.RECEIVED, "report_count": 0} for n, case in enumerate(cases) if case.current}
    decisions = decide(items, POLICY, NOW, rows=rows, allowed_from=RECEIVED)
    assert [d.post_id for d in decisions] == [0, 1, 2, 3, 4]
    assert [(d.status, d.skipped) for d in decisions] == [
        (A, ""),
        ("", NOT_PENDING),
        (R, ""),
        (Q, MODEL_ERROR),
        (Q, ""),
    ]


# The rules after the policy: familiarity routing, the abuse rule, a decided campaign.
# want: (status, action, routing_reason, abuse, campaign)
UNFAMILIAR = "unfamiliar text (1.5 x the limit)"
ABUSE_HELD = "abuse 0.600 >= queue 0.500"
ABUSE_REMOVED = "abuse 0.950 >= remove 0.900"
CAMPAIGN_REMOVED = f"{CAMPAIGN_SPAM_REASON}: removed"

RULES = [
    # Familiarity routing.
    ("familiar text is decided as usual", Case(final=0.1, unfamiliarity=0.5), (A, Action.APPROVE, "", "", "")),
    ("unfamiliar text is not approved", Case(final=0.1, unfamiliarity=1.5), (Q, Action.QUEUE, UNFAMILIAR, "", "")),
    (
        "unfamiliar text is not removed on its text alone",
        Case(final=0.95, sub=0.1, unfamiliarity=1.5),
        (Q, Action.QUEUE, UNFAMILIAR, "", ""),
    ),
    (
        "a strong link, preview or behaviour score still removes it",
        Case(final=0.95, sub=0.95, unfamiliarity=1.5),
        (R, Action.REMOVE, "", "", ""),
    ),
    (
        "the source may score unfamiliar text anyway",
        Case(final=0.1, unfamiliarity=1.5, unfamiliar_action="score"),
        (A, Action.APPROVE, "", "", ""),
    ),
    (
        "both routings are named",
        Case(final=0.1, language="es", unfamiliarity=1.5),
        (Q, Action.QUEUE, f"language not validated: es; {UNFAMILIAR}", "", ""),
    ),
    # The abuse rule: only ever stricter.
    ("no abuse model changes nothing", Case(final=0.1, abuse=None), (A, Action.APPROVE, "", "", "")),
    ("abuse below the queue threshold", Case(final=0.1, abuse=0.3), (A, Action.APPROVE, "", "", "")),
    ("abuse at the queue threshold holds", Case(final=0.1, abuse=0.6), (Q, Action.QUEUE, ABUSE_HELD, ABUSE_HELD, "")),
    ("abuse at the remove threshold removes", Case(final=0.1, abuse=0.95), (R, Action.REMOVE, "", ABUSE_REMOVED, "")),
    ("abuse never softens a removal", Case(final=0.95, abuse=0.6), (R, Action.REMOVE, "", "", "")),
    ("abuse outranks trust", Case(final=0.1, author=TRUSTED, abuse=0.6), (Q, Action.QUEUE, ABUSE_HELD, ABUSE_HELD, "")),
    (
        "a language routing is the reason before abuse",
        Case(final=0.1, language="es", abuse=0.6),
        (Q, Action.QUEUE, "language not validated: es", "", ""),
    ),
    # A campaign a moderator decided as spam.
    ("an undecided campaign changes nothing", Case(final=0.1, campaign=""), (A, Action.APPROVE, "", "", "")),
    ("a ham campaign changes nothing", Case(final=0.1, campaign=Label.HAM), (A, Action.APPROVE, "", "", "")),
    (
        "a spam campaign holds its new member",
        Case(final=0.1, campaign=Label.SPAM),
        (Q, Action.QUEUE, CAMPAIGN_SPAM_REASON, "", CAMPAIGN_SPAM_REASON),
    ),
    (
        "the source may remove its new members",
        Case(final=0.5, campaign=Label.SPAM, campaign_action="remove"),
        (R, Action.REMOVE, "", "", CAMPAIGN_REMOVED),
    ),
    (
        "a trusted author's member is held, not removed",
        Case(final=0.1, campaign=Label.SPAM, campaign_action="remove", author=TRUSTED),
        (Q, Action.QUEUE, CAMPAIGN_SPAM_REASON, "", CAMPAIGN_SPAM_REASON),
    ),
    (
        "a queued member stays queued, the campaign changed nothing",
        Case(final=0.5, campaign=Label.SPAM),
        (Q, Action.QUEUE, "", "", ""),
    ),
    (
        "the campaign follows the abuse rule: an abusive member is held by abuse",
        Case(final=0.1, abuse=0.6, campaign=Label.SPAM),
        (Q, Action.QUEUE, ABUSE_HELD, ABUSE_HELD, ""),
    ),
    (
        "a campaign's hold is the reason before the language routing's absence",
        Case(final=0.1, language="es", campaign=Label.SPAM),
        (Q, Action.QUEUE, "language not validated: es", "", ""),
    ),
]


@pytest.mark.parametrize(("case", "want"), [row[1:] for row in RULES], ids=[row[0] for row in RULES])
def test_decide_rules_after_the_policy(case: Case, want: tuple[Any, ...]) -> None:
    item = item_of(case)
    rows = {7: {"status": case.current, "report_count": case.reports}}
    (decision,) = decide([item], case.policy, NOW, rows=rows, allowed_from=case.allowed)
    assert (decision.status, decision.action, decision.routing_reason, decision.abuse, decision.campaign) == want
    assert bool(decision.campaign_before) == bool(decision.campaign)  # its audit row's "before"


SCORE_UNEARNED = "approval not yet earned: score 0.100 >= 0.050"
ABUSE_UNEARNED = "approval not yet earned: abuse 0.200 >= 0.150"
# The earned approval (scoring.services.earned_approval), with the policy's 0.2 and the source's
# abuse queue threshold 0.5, starting at 0.05 and 0.15: only ever an approval turned into a queue.
EARNED = [
    ("level 0 approves the surest posts", Case(final=0.04, level=0.0), (A, Action.APPROVE, "")),
    ("level 0 queues the rest of the band", Case(final=0.1, level=0.0), (Q, Action.QUEUE, SCORE_UNEARNED)),
    ("level 0 queues a milder abuse score", Case(final=0.04, abuse=0.2, level=0.0), (Q, Action.QUEUE, ABUSE_UNEARNED)),
    ("half the band at level 0.5", Case(final=0.12, abuse=0.32, level=0.5), (A, Action.APPROVE, "")),
    (
        "beyond half the band at level 0.5",
        Case(final=0.13, level=0.5),
        (Q, Action.QUEUE, "approval not yet earned: score 0.130 >= 0.125"),
    ),
    ("level 1 is the policy's band", Case(final=0.19, abuse=0.49, level=1.0), (A, Action.APPROVE, "")),
    ("off, the policy's band", Case(final=0.1, level=None), (A, Action.APPROVE, "")),
    (
        "an author a moderator allow-listed is not gated",
        Case(final=0.1, author={**TRUSTED, "allowlisted_until": LATER}, level=0.0),
        (A, Action.APPROVE, ""),
    ),
    (
        "an expired allow-listing is gated again",
        Case(final=0.1, author={**TRUSTED, "allowlisted_until": EARLIER}, level=0.0),
        (Q, Action.QUEUE, SCORE_UNEARNED),
    ),
    ("a removal is untouched", Case(final=0.95, level=0.0), (R, Action.REMOVE, "")),
    ("a block list's removal is untouched", Case(final=None, level=0.0), (R, Action.REMOVE, "")),
    ("a queue is untouched", Case(final=0.5, level=0.0), (Q, Action.QUEUE, "")),
    ("the abuse rule's queue keeps its reason", Case(final=0.1, abuse=0.6, level=0.0), (Q, Action.QUEUE, ABUSE_HELD)),
    (
        "a suspended author's queue is enforcement's",
        Case(final=0.1, author=SUSPENDED, suspended_posts="queue", level=0.0),
        (Q, Action.QUEUE, ""),
    ),
    (
        "a spam campaign's queue keeps its reason",
        Case(final=0.1, campaign=Label.SPAM, level=0.0),
        (Q, Action.QUEUE, CAMPAIGN_SPAM_REASON),
    ),
]


@pytest.mark.parametrize(("case", "want"), [row[1:] for row in EARNED], ids=[row[0] for row in EARNED])
def test_decide_earned_approval(case: Case, want: tuple[Any, ...], settings: Any) -> None:
    settings.EARNED_APPROVAL = case.level is not None
    settings.EARNED_APPROVAL_START_FINAL = 0.05
    settings.EARNED_APPROVAL_START_ABUSE = 0.15
    item = item_of(case)
    rows = {7: {"status": case.current, "report_count": case.reports}}
    (decision,) = decide([item], case.policy, NOW, rows=rows, allowed_from=case.allowed)
    assert (decision.status, decision.action, decision.routing_reason) == want
