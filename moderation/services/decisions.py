"""Moderator decisions. decision_record is the one way a moderator's label lands on a post:
it appends a Decision (never edits one), moves the post through the state machine, keeps the
spam counters of author/domain/IP in step, releases the claim, writes the audit entry, sends
`moderation.signals.decision_recorded` (feedback builds labelled examples from it) and, after
commit, asks the pipeline to notify the platform through its webhook."""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest
from django.utils import timezone

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

# Where the pipeline may expose webhook_enqueue_for_decision; looked up lazily so moderation
# never hard-depends on scoring.
_WEBHOOK_MODULES = ("scoring.services.webhooks", "scoring.services.decisions", "scoring.webhooks")


def _webhook_hook() -> Callable[..., Any] | None:
    for name in _WEBHOOK_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        fn = getattr(module, "webhook_enqueue_for_decision", None)
        if callable(fn):
            return fn
    return None


def notify_platform(*, post: Post) -> None:
    """Enqueue the decision webhook if the pipeline provides one; never fails the caller."""
    fn = _webhook_hook()
    if fn is None:
        return
    try:
        params = inspect.signature(fn).parameters
        if "post" in params and params["post"].kind is inspect.Parameter.KEYWORD_ONLY:
            fn(post=post)
        else:
            fn(post)
    except Exception:  # the platform hears about it from the sweeper; the decision stands
        logger.exception("moderation.decision_webhook_failed", extra={"post_id": post.pk})


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
        Author.objects.filter(pk=post.author_id).update(spam_count=new_count)
        if post.ip_id:
            IpAddress.objects.filter(pk=post.ip_id).update(spam_count=new_count)
        if post.link_id:
            Domain.objects.filter(links__id=post.link_id).update(spam_count=new_count)
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
    decision_recorded.send(sender=Decision, decision=decision, post=post)
    transaction.on_commit(lambda: notify_platform(post=post))
    return decision
