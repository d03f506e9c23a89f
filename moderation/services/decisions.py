"""Moderator decisions. decision_record is the one way a moderator's label lands on a post:
it appends a Decision (never edits one), moves the post through the state machine, keeps the
spam counters of author/domain/IP in step, releases the claim, writes the audit entry and sends
`moderation.signals.decision_recorded` (scoring enqueues the platform webhook from it,
feedback builds labelled examples)."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from config.metrics import DECISIONS
from moderation.errors import ApplicationError, InvalidTransition
from moderation.models import (
    POST_TRANSITIONS,
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
from moderation.services.audit import audit_record
from moderation.signals import decision_recorded

logger = logging.getLogger(__name__)

LABEL_TO_STATUS: dict[str, str] = {Label.SPAM: PostStatus.REMOVED, Label.HAM: PostStatus.APPROVED}
SPAM_STATUSES = frozenset({PostStatus.REMOVED, PostStatus.AUTO_REMOVED})


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
        # (moderation.services.counters), so a decision cannot deadlock with a scoring batch.
        Author.objects.filter(pk=post.author_id).update(spam_count=new_count)
        if post.link_id:
            Domain.objects.filter(links__id=post.link_id).update(spam_count=new_count)
        if post.ip_id:
            IpAddress.objects.filter(pk=post.ip_id).update(spam_count=new_count)
    return previous


def reason_code_validate(*, label: str, reason_code: str) -> None:
    if label not in LABEL_TO_STATUS:
        raise ApplicationError("Unknown label.", code="invalid_label", fields={"label": ["Choose spam or ham."]})
    if not reason_code:
        return
    if not ReasonCode.objects.filter(code=reason_code, is_active=True, applies_to=label).exists():
        raise ApplicationError(
            "Unknown reason code for this label.",
            code="invalid_reason_code",
            fields={"reason_code": [f"{reason_code!r} is not an active reason for {label}."]},
        )


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
) -> Decision:
    if validate_reason:
        reason_code_validate(label=label, reason_code=reason_code)
    post = Post.objects.select_for_update(of=("self",)).get(pk=post.pk)
    previous = post_set_status(post=post, status=LABEL_TO_STATUS[label])
    decision = Decision.objects.create(
        post=post,
        moderator=moderator,
        label=label,
        reason_code=reason_code,
        note=note,
        bulk_action=bulk_action,
    )
    if post.claimed_by_id is not None:
        post.claimed_by = None
        post.claimed_until = None
        post.save(update_fields=["claimed_by", "claimed_until"])
    if bulk_action is None:  # a bulk action writes one audit row for the whole batch
        audit_record(
            actor=moderator,
            action="post.decide",
            target=post,
            before={"status": previous},
            after={"status": post.status, "label": label, "reason_code": reason_code, "decision_id": decision.pk},
        )
    # Receivers: scoring enqueues the platform webhook, feedback records a labelled example.
    decision_recorded.send(sender=Decision, decision=decision, post=post)
    DECISIONS.labels("moderator", label).inc()
    return decision
