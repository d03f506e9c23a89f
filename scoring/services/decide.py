"""The decision step: what the scores of a batch do to its posts, as a pure function.

    decide(items, policy, now, rows=..., allowed_from=..., existing=...) -> list[Decision]

No I/O: it reads only its arguments (the items with their model outputs and the rows the
scoring load joined, the policy, the clock's `now`, the post rows locked for the write) and the
settings. It holds the whole rule: the policy's thresholds (scoring.services.policy), the
block-list short-circuit's removal, a moderator's enforcement (scoring.services.enforcement),
the language and familiarity routing, the abuse rule (scoring.services.abuse_policy), the rule of
a campaign a moderator decided (scoring.services.campaigns.campaign_action), the source's earned
approval (scoring.services.earned_approval), and the status
transitions a score may make (moderation.models
POST_TRANSITIONS). scoring.services.scoring.settle loads, calls it and hands the decisions to
persist, which only writes; the worker's batches, the inline pre-publish check and re-scores all
go through that one path. The campaign detection that writes buckets runs before it and the
audit rows of campaign-decided members are written by persist. tests/scoring/test_decide.py
covers every branch without a database.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from django.conf import settings

from moderation.enforcement_state import author_allowlisted
from moderation.models import POST_TRANSITIONS, Post, PostStatus
from scoring.features.extract import PostFeatures
from scoring.models import Action, DecisionPolicy
from scoring.services.abuse_policy import abuse_decide, abuse_thresholds
from scoring.services.campaigns import campaign_action
from scoring.services.earned_approval import approval_gate, earned_approval_decide
from scoring.services.enforcement import enforced_action
from scoring.services.policy import (
    familiarity_routing_reason,
    language_routing_reason,
    policy_actions,
    strongest_sub_score,
)
from scoring.services.shortcircuit import SHORT_CIRCUIT_MODEL_SET
from scoring.services.spot_checks import spot_check_selected
from scoring.triton_types import ScoringOutput

ACTION_STATUS: dict[str, str] = {
    Action.REMOVE: PostStatus.AUTO_REMOVED,
    Action.QUEUE: PostStatus.QUEUED,
    Action.APPROVE: PostStatus.AUTO_APPROVED,
}

# Why a decision writes no Score.
NOT_PENDING = "not_pending"  # gone, or no longer in a status this pass may change
MODEL_ERROR = "model_error"  # the model failed on this post alone: queued for a human, no score
ALREADY_SCORED = "already_scored"  # this (model set, revision) was written before
# A moderator holds the post (a live claim, or assigned to them): a re-score of the waiting
# queue leaves it to them (the row says so only when the pass asked, settle's leave_owned).
OWNED = "owned"


@dataclass
class Item:
    """One post on its way through a scoring pass: the post with the rows the scoring load
    joined, its features, the short-circuit reason (block lists) or the model output."""

    post: Post
    features: PostFeatures
    reason: str | None = None
    output: ScoringOutput | None = None
    model_error: str = ""
    revision: int = 0
    latency_ms: float = 0.0
    extra: dict[str, object] = field(default_factory=dict)

    @functools.cached_property
    def model_set(self) -> str:  # read three times per post by a pass; computed once
        if self.reason is not None:
            return SHORT_CIRCUIT_MODEL_SET
        assert self.output is not None
        return model_set_of(self.output.model_versions)

    @property
    def final_score(self) -> float:
        if self.reason is not None:
            return 1.0
        assert self.output is not None
        return float(self.output.final_prob)


def model_set_of(model_versions: dict[str, str]) -> str:
    return ",".join(f"{name}:{version}" for name, version in sorted(model_versions.items()))[:200]


@dataclass(frozen=True)
class Decision:
    """What one item does to its post. `skipped` names why no Score is written ("" when one
    is); `status` is the post's status afterwards ("" when the post is gone)."""

    item: Item
    status: str
    skipped: str = ""
    action: Action | None = None
    status_changed: bool = False  # the status moved (status_changed_at is set)
    removed_now: bool = False  # moved to auto_removed by this decision (spam counters)
    enforcement: str = ""  # the enforcement that changed the policy's action, if one did
    # Why the post waits for a human, where it does: the language or familiarity routing, else
    # the campaign's hold, else the abuse rule's, else the earned approval's.
    routing_reason: str = ""
    abuse: str = ""  # how the abuse score changed the action, if it did
    campaign: str = ""  # how a decided campaign changed the action, if it did
    campaign_before: str = ""  # the action the campaign changed (its audit row's "before")
    # The models approved or removed the post on their own at its first score and it was drawn
    # for a moderator to confirm (scoring.services.spot_checks).
    spot_check: bool = False

    @property
    def post_id(self) -> int:
        return int(self.item.post.id)

    @property
    def scored(self) -> bool:
        return not self.skipped


def decide(
    items: Sequence[Item],
    policy: DecisionPolicy,
    now: datetime,
    *,
    rows: Mapping[int, Mapping[str, Any]],
    allowed_from: Set[str],
    existing: Set[tuple[int, str, int]] = frozenset(),
) -> list[Decision]:
    """One Decision per item, in order. `rows`: post id -> {"status", "report_count"} as
    locked for the write (a missing post is gone), and "owned" when a moderator holds the post
    (only a pass that leaves such posts alone reads it); `allowed_from`: the statuses this pass
    may change (a first score: received; a re-score: the rescorable ones); `existing`: the
    (post, model set, revision) keys already written (a re-score's duplicate)."""
    decided: dict[int, Decision] = {}
    to_score: list[tuple[int, Item, str, int]] = []  # index, item, current status, reports
    for index, item in enumerate(items):
        row = rows.get(item.post.id)
        if row is None or row["status"] not in allowed_from:
            decided[index] = Decision(item=item, status=row["status"] if row else "", skipped=NOT_PENDING)
        elif row.get("owned"):
            decided[index] = Decision(item=item, status=row["status"], skipped=OWNED)
        elif item.model_error:
            # Fail towards a human: queued without a score rather than retried forever.
            decided[index] = Decision(item=item, status=PostStatus.QUEUED, skipped=MODEL_ERROR, status_changed=True)
        elif (item.post.id, item.model_set, item.revision) in existing:
            decided[index] = Decision(item=item, status=row["status"], skipped=ALREADY_SCORED)
        else:
            reports = max(int(row["report_count"]), int(item.features.behaviour["report_count"]))
            to_score.append((index, item, row["status"], reports))
    if to_score:
        scored = [item for _, item, _, _ in to_score]
        language = [language_routing_reason(item.post) for item in scored]
        unfamiliar = [familiarity_routing_reason(item.post, _unfamiliarity(item)) for item in scored]
        actions = policy_batch_actions(scored, policy, [r for _, _, _, r in to_score], language, unfamiliar)
        for (index, item, current, _), action, lang, odd in zip(to_score, actions, language, unfamiliar, strict=True):
            reason = "; ".join(r for r in (lang, odd) if r)
            decided[index] = _scored(
                item, action=action, current=current, routing_reason=reason, now=now, policy=policy
            )
    return [decided[index] for index in range(len(items))]


def _unfamiliarity(item: Item) -> float | None:
    return item.output.unfamiliarity if item.output is not None else None


def _scored(
    item: Item, *, action: Action, current: str, routing_reason: str, now: datetime, policy: DecisionPolicy
) -> Decision:
    """The policy's action as enforcement, then the abuse score, then a decided campaign, then
    the source's earned approval change it (each only stricter, except a trusted author's pass),
    and the transition it makes, if the post may make it. The source, author and campaign are
    the rows joined: no query."""
    final, why = enforced_action(post=item.post, action=action, short_circuited=item.reason is not None, now=now)
    abuse_prob = item.output.abuse_prob if item.output is not None else None
    thresholds = abuse_thresholds(item.post.source)
    final, abuse = abuse_decide(final, abuse_prob, thresholds)
    before = final
    final, campaign = campaign_action(post=item.post, action=final, now=now)
    earned = ""
    # Only an approval can be held (a block list's removal, an enforcement's queue are none); an
    # author a moderator allow-listed is vouched for by a person, so the models' caution does not apply.
    if final == Action.APPROVE and settings.EARNED_APPROVAL and not author_allowlisted(item.post.author, now=now):
        gate = approval_gate(
            item.post.source.approval_level,
            approve_threshold=policy.approve_threshold,
            abuse_queue_threshold=thresholds.queue,
        )
        final, earned = earned_approval_decide(final, item.final_score, abuse_prob, gate)
    # A campaign's hold, then the abuse rule's, then the earned approval's, is the reason the
    # post waits for a human, like a language routing.
    routing_reason = routing_reason or campaign or abuse or earned
    target = ACTION_STATUS[final]
    moves = target != current and target in POST_TRANSITIONS[current]
    # Only the models' own first call: not a block list's, an enforcement's or a campaign's.
    models_alone = item.reason is None and not why and not campaign and current == PostStatus.RECEIVED
    spot_check = (
        moves
        and models_alone
        and final in (Action.APPROVE, Action.REMOVE)
        and spot_check_selected(item.post.id, item.post.source)
    )
    return Decision(
        item=item,
        status=target if moves else current,
        action=final,
        status_changed=moves,
        removed_now=moves and target == PostStatus.AUTO_REMOVED,
        enforcement=why,
        # Only where it decided: a removed post was not routed, a queued one may have been.
        routing_reason=routing_reason if final == Action.QUEUE else "",
        abuse=abuse,
        campaign=campaign,
        campaign_before=str(before) if campaign else "",
        spot_check=spot_check,
    )


def policy_batch_actions(
    items: Sequence[Item],
    policy: DecisionPolicy,
    report_counts: Sequence[int],
    routing_reasons: Sequence[str] = (),
    unfamiliar_reasons: Sequence[str] = (),
) -> list[Action]:
    """The policy's action for each item, in ONE policy_actions call: the same rule as
    policy_decide, without its per-post numpy overhead (8 % of the worker's CPU as a call per
    post, py-spy). A short-circuited post is removed whatever the policy says.
    `routing_reasons`: language_routing_reason per item, `unfamiliar_reasons`:
    familiarity_routing_reason per item (none given: no item is routed)."""
    strongest = [
        strongest_sub_score((o.text_prob, o.preview_prob, o.link_prob, o.behaviour_prob))
        if (o := item.output) is not None
        else 0.0
        for item in items
    ]
    context = [
        strongest_sub_score((o.preview_prob, o.link_prob, o.behaviour_prob)) if (o := item.output) is not None else 0.0
        for item in items
    ]
    decided = policy_actions(
        policy=policy,
        final_scores=np.asarray([item.final_score for item in items], dtype=np.float64),
        report_counts=np.asarray(report_counts, dtype=np.float64),
        strongest_sub_scores=np.asarray(strongest, dtype=np.float64),
        languages_unvalidated=np.asarray([bool(r) for r in routing_reasons], dtype=bool) if routing_reasons else None,
        unfamiliar=np.asarray([bool(r) for r in unfamiliar_reasons], dtype=bool) if unfamiliar_reasons else None,
        strongest_context_scores=np.asarray(context, dtype=np.float64),
    )
    return [
        Action.REMOVE if item.reason is not None else Action(str(action))
        for item, action in zip(items, decided, strict=True)
    ]
