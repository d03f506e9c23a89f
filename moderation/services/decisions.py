"""Moderator decisions. decision_record is the one way a moderator's label lands on a post:
it appends a Decision (never edits one), moves the post through the state machine, keeps the
spam counters of author/domain/IP in step, releases the claim and the assignment, writes the
audit entry and sends
`moderation.signals.decision_recorded` (scoring enqueues the platform webhook from it,
feedback builds labelled examples)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from core.errors import ApplicationError, Conflict, Forbidden, InvalidTransition
from core.metrics import DECISIONS
from moderation.categories import category_for_label
from moderation.models import (
    POST_TRANSITIONS,
    Appeal,
    AppealStatus,
    Author,
    BulkAction,
    Decision,
    Domain,
    IpAddress,
    Label,
    Post,
    PostStatus,
    ReasonCode,
)
from moderation.services.assignment import assignment_end_on_decision
from moderation.services.audit import audit_record
from moderation.services.priority import posts_report_weight_refresh, reporter_records_relabel
from moderation.services.reasons import reason_code_check
from moderation.services.source_stats import source_stats_move_spam
from moderation.services.statements import statement_for_decision, statements_reverse
from moderation.signals import decision_recorded, decisions_undone

logger = logging.getLogger(__name__)

LABEL_TO_STATUS: dict[str, str] = {Label.SPAM: PostStatus.REMOVED, Label.HAM: PostStatus.APPROVED}
SPAM_STATUSES = frozenset({PostStatus.REMOVED, PostStatus.AUTO_REMOVED})
# Statuses only a moderator sets: a post in one of them was decided, and deciding it again
# needs an explicit override.
DECIDED_STATUSES = frozenset(LABEL_TO_STATUS.values())


def undo_window() -> timedelta:
    return timedelta(seconds=int(getattr(settings, "DASHBOARD_UNDO_SECONDS", 300)))


def post_version(post: Post) -> str:
    """What a decision form was rendered against: the status and when it last changed. Every
    status move rewrites status_changed_at, so a form rendered before any decision, undo or
    re-score is told apart from one rendered after it."""
    return f"{post.status}@{int(post.status_changed_at.timestamp() * 1_000_000)}"


def key_reason(*, label: str, reason_codes: Sequence[ReasonCode] | None = None) -> str:
    """The reason recorded when a decision comes without one (keyboard s/h, bulk): the code in
    DASHBOARD_KEY_REASONS for the label if it is active, else the label's first active reason.
    `reason_codes`: the active reason codes when the caller has them loaded (no query)."""
    configured = (getattr(settings, "DASHBOARD_KEY_REASONS", None) or {}).get(label, "")
    if reason_codes is None:
        reason_codes = list(ReasonCode.objects.filter(is_active=True, applies_to=label))
    candidates = sorted(
        (r for r in reason_codes if r.applies_to == label and r.is_active), key=lambda r: (r.ordering, r.code)
    )
    if any(r.code == configured for r in candidates):
        return str(configured)
    return candidates[0].code if candidates else ""


def latest_live_decision(*, post: Post) -> Decision | None:
    return (
        Decision.objects.filter(post=post, undone_at__isnull=True)
        .select_related("moderator")
        .order_by("-created_at", "-pk")
        .first()
    )


def post_set_status(*, post: Post, status: str, check: bool = True) -> str:
    """Move the post to `status`, adjusting spam counters. Returns the previous status.

    Same-status moves are allowed (a moderator confirming an earlier decision). With
    check=False the state machine is bypassed: only undo uses it, to restore a prior state.
    """
    previous = post.status
    if previous == status:
        return previous
    if check and status not in POST_TRANSITIONS.get(previous, frozenset()):
        raise InvalidTransition(f"A post in status {previous!r} cannot move to {status!r}.")
    now = timezone.now()
    post.status = status
    post.status_changed_at = now
    post.save(update_fields=["status", "status_changed_at"])
    delta = int(status in SPAM_STATUSES) - int(previous in SPAM_STATUSES)
    if delta:
        # Floor at 0: counters of rows created before this service kept them may be behind.
        new_count = Greatest(F("spam_count") + delta, Value(0))
        # Tables in the order every counter writer locks them: authors -> domains -> IPs
        # (core.counters), so a decision cannot deadlock with a scoring batch.
        Author.objects.filter(pk=post.author_id).update(spam_count=new_count)
        if post.link_id:
            Domain.objects.filter(links__id=post.link_id).update(spam_count=new_count)
        if post.ip_id:
            IpAddress.objects.filter(pk=post.ip_id).update(spam_count=new_count)
        source_stats_move_spam(post=post, delta=delta)
    return previous


def reason_code_validate(*, label: str, reason_code: str) -> str:
    """Check the reason code for the label; return the category a decision with it is about
    (the reason code's, else the label's: moderation.categories)."""
    if label not in LABEL_TO_STATUS:
        raise ApplicationError("Unknown label.", code="invalid_label", fields={"label": ["Choose spam or ham."]})
    reason_code_check(label=label, reason_code=reason_code, doing=f"marking a post {Label(label).label.lower()}")
    if not reason_code:
        return category_for_label(label)
    found = (
        ReasonCode.objects.filter(code=reason_code, is_active=True, applies_to=label)
        .values_list("category", flat=True)
        .first()
    )
    return found or category_for_label(label)


@transaction.atomic
def decision_record(
    *,
    post: Post,
    moderator: Any,
    label: str,
    reason_code: str = "",
    note: str = "",
    bulk_action: BulkAction | None = None,
    validate_reason: bool = True,
    expected_version: str | None = None,
    override: bool = False,
    category: str = "",
) -> Decision:
    """Record a moderator's label. An empty reason_code becomes the label's key reason. The
    decision's category is its reason code's (`category`: the caller already validated it).

    Optimistic concurrency: with expected_version (post_version of the post the form showed), a
    post that changed since raises Conflict("stale") instead of recording a second decision. A
    post already decided by a moderator raises Conflict("already_decided") unless override."""
    reason_code = reason_code or key_reason(label=label)
    if validate_reason:
        category = reason_code_validate(label=label, reason_code=reason_code)
    elif not category and reason_code:
        category = ReasonCode.objects.filter(code=reason_code).values_list("category", flat=True).first() or ""
    category = category or category_for_label(label)
    post = Post.objects.select_for_update(of=("self",)).get(pk=post.pk)
    prior = latest_live_decision(post=post)
    if expected_version is not None and expected_version != post_version(post):
        raise Conflict(_changed_message(post, prior), code="stale")
    if post.status in DECIDED_STATUSES and prior is not None and not override:
        raise Conflict(_changed_message(post, prior), code="already_decided")
    previous = post_set_status(post=post, status=LABEL_TO_STATUS[label])
    decision = Decision.objects.create(
        post=post,
        moderator=moderator,
        label=label,
        reason_code=reason_code,
        category=category,
        note=note,
        bulk_action=bulk_action,
        previous_status=previous,
    )
    reporter_records_relabel(post=post, old_label=prior.label if prior else None, new_label=label)
    released = assignment_end_on_decision(post=post)
    if post.claimed_by_id is not None:
        post.claimed_by = None
        post.claimed_until = None
        released = [*released, "claimed_by", "claimed_until"]
    if released:
        post.save(update_fields=released)
    if bulk_action is None:  # a bulk action writes one audit row for the whole batch
        audit_record(
            actor=moderator,
            action="post.decide",
            target=post,
            before={"status": previous},
            after={"status": post.status, "label": label, "reason_code": reason_code, "decision_id": decision.pk},
        )
    statement_for_decision(decision=decision, post=post, prior=prior)
    # Receivers: scoring enqueues the platform webhook, feedback records a labelled example.
    decision_recorded.send(sender=Decision, decision=decision, post=post)
    DECISIONS.labels("moderator", label, decision.category or category_for_label(label)).inc()
    return decision


def _changed_message(post: Post, prior: Decision | None) -> str:
    if prior is not None and post.status in DECIDED_STATUSES:
        when = timezone.localtime(prior.created_at).strftime("%Y-%m-%d %H:%M %Z")
        return (
            f"Already decided: {prior.get_label_display().lower()} by {prior.moderator} at {when}. "
            "Override to change it."
        )
    return f"This post changed since the page was loaded (now {post.get_status_display().lower()}). Reload it."


def appeal_since(*, post_id: int, since: Any) -> Appeal | None:
    """The appeal that ties a decision made at `since` to what the author was told: one opened
    against it or resolved after it (an overturn's own decision is recorded just before its
    appeal is resolved). Undoing such a decision would leave the post's state and the appeal's
    outcome contradicting each other, and the platform has already passed the outcome on."""
    return (
        Appeal.objects.filter(post_id=post_id)
        .filter(Q(created_at__gte=since) | Q(resolved_at__gte=since))
        .order_by("-created_at", "-pk")
        .first()
    )


def appeal_undo_message(appeal: Appeal) -> str:
    if appeal.status == AppealStatus.PENDING:
        return f"The author appealed this decision (appeal #{appeal.pk}): review the appeal instead of undoing it."
    return (
        f"Appeal #{appeal.pk} was resolved ({appeal.get_status_display().lower()}) and the platform told "
        "the author: record a new decision (Override) instead of undoing this one."
    )


def decision_undo_blocker(*, decision: Decision) -> str:
    """Why an appeal keeps this decision from being undone; empty when none does."""
    appeal = appeal_since(post_id=decision.post_id, since=decision.created_at)
    return appeal_undo_message(appeal) if appeal is not None else ""


def decision_can_undo(*, decision: Decision, user: Any) -> bool:
    """Within the undo window, not undone, not part of a bulk action (undo that instead), not
    tied to an appeal, by its moderator or an admin."""
    from moderation.permissions import can_administer

    if decision.undone_at is not None or decision.bulk_action_id is not None or not decision.previous_status:
        return False
    if timezone.now() - decision.created_at > undo_window():
        return False
    if decision_undo_blocker(decision=decision):
        return False
    return decision.moderator_id == getattr(user, "pk", None) or can_administer(user)


@transaction.atomic
def decision_undo(*, decision: Decision, moderator: Any) -> Decision:
    """Undo a single decision: the post goes back to the status it had before, the reporters'
    records and the post's priority follow, the platform is told (decisions_undone)."""
    post = Post.objects.select_for_update(of=("self",)).select_related("source").get(pk=decision.post_id)
    decision = Decision.objects.select_for_update(of=("self",)).get(pk=decision.pk)
    if decision.undone_at is not None:
        raise Conflict("This decision was already undone.", code="already_undone")
    if decision.bulk_action_id is not None:
        raise Conflict(
            f"This decision is part of bulk action #{decision.bulk_action_id}: undo that from the audit log.",
            code="part_of_bulk",
        )
    if not decision.previous_status or timezone.now() - decision.created_at > undo_window():
        raise Conflict("The undo window has passed.", code="undo_expired")
    if blocker := decision_undo_blocker(decision=decision):
        raise Conflict(blocker, code="appealed")
    if not decision_can_undo(decision=decision, user=moderator):
        raise Forbidden("Only the moderator who decided, or an admin, can undo this decision.", code="not_yours")
    latest = latest_live_decision(post=post)
    if latest is None or latest.pk != decision.pk:
        raise Conflict("A later decision superseded this one; undo that one first.", code="superseded")
    now = timezone.now()
    restored = decision.previous_status
    post_set_status(post=post, status=restored, check=False)
    decision.undone_at = now
    decision.save(update_fields=["undone_at"])
    after = latest_live_decision(post=post)
    reporter_records_relabel(post=post, old_label=decision.label, new_label=after.label if after else None)
    posts_report_weight_refresh(post_ids=[post.pk])
    audit_record(
        actor=moderator,
        action="post.undo",
        target=post,
        before={"status": LABEL_TO_STATUS[decision.label], "decision_id": decision.pk},
        after={"status": restored},
    )
    statements_reverse(decisions=[decision])
    decisions_undone.send(sender=Decision, decisions=[decision], bulk_action=None, posts=[post])
    return decision
