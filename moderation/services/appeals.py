"""Appeals: the platform sends an author's appeal against a decided post (the API); a
moderator other than the one who decided upholds or overturns it. An overturn is a new
decision with the opposite label (decision_record, so the post's status, the counters, the
labelled example for training and the decision webhook all follow); every outcome is audited
and the platform gets an `appeal.decided` event."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.errors import ApplicationError, Conflict, Forbidden, NotFound
from moderation.models import Appeal, AppealStatus, Label, Post, PostStatus, Source
from moderation.services.audit import audit_record
from moderation.services.decisions import latest_live_decision
from moderation.services.reasons import reason_code_check
from moderation.signals import platform_event

EVENT_APPEAL = "appeal.decided"
APPEALABLE_STATUSES = frozenset(
    {PostStatus.AUTO_REMOVED, PostStatus.AUTO_APPROVED, PostStatus.REMOVED, PostStatus.APPROVED}
)
REMOVED_STATUSES = frozenset({PostStatus.AUTO_REMOVED, PostStatus.REMOVED})
OUTCOMES = {"uphold": AppealStatus.UPHELD, "overturn": AppealStatus.OVERTURNED}


def appeal_submit(*, source: Source, post_external_id: str, statement: str) -> tuple[Appeal, bool]:
    """Open an appeal on `source`'s post. Returns (appeal, created): the post's open appeal is
    returned as it is when there is one. Raises NotFound for another source's or an unknown
    post, Conflict for a post not decided yet."""
    post = Post.objects.filter(source=source, external_id=post_external_id).first()
    if post is None:
        raise NotFound(
            "No post with this external_id.", code="post_not_found", fields={"post_external_id": ["Unknown post."]}
        )
    open_appeal = Appeal.objects.filter(post=post, status=AppealStatus.PENDING).first()
    if open_appeal is not None:
        return open_appeal, False
    if post.status not in APPEALABLE_STATUSES:
        raise Conflict("This post has no decision to appeal yet.", code="not_decided")
    try:
        with transaction.atomic():
            appeal = Appeal.objects.create(
                source=source,
                post=post,
                decision=latest_live_decision(post=post),
                appealed_status=post.status,
                statement=statement,
            )
            audit_record(
                actor=None,
                action="appeal.submit",
                target=appeal,
                after={"post_id": post.pk, "status": post.status, "via": f"api:{source.slug}"},
            )
    except IntegrityError:  # the same appeal sent twice at once: the first one stands
        return Appeal.objects.get(post=post, status=AppealStatus.PENDING), False
    return appeal, True


def appeal_outcome_label(*, outcome: str, removed: bool) -> str:
    """The label a post carries after the outcome, which is the label its reason must have:
    upholding a removal or overturning an approval says spam."""
    return Label.SPAM if (outcome == "uphold") == removed else Label.HAM


def appeal_can_resolve(*, appeal: Appeal, user: Any) -> bool:
    """Anyone moderating, except the moderator whose decision is appealed."""
    return appeal.decision is None or appeal.decision.moderator_id != getattr(user, "pk", None)


@transaction.atomic
def appeal_resolve(*, appeal: Appeal, moderator: Any, outcome: str, reason_code: str = "", note: str = "") -> Appeal:
    """Uphold or overturn. An overturn of a removal approves the post and vice versa."""
    from moderation.services.decisions import decision_record

    if outcome not in OUTCOMES:
        raise ApplicationError("Uphold or overturn.", code="invalid_outcome", fields={"outcome": ["Choose one."]})
    appeal = Appeal.objects.select_for_update(of=("self",)).select_related("decision", "source").get(pk=appeal.pk)
    if appeal.status != AppealStatus.PENDING:
        raise Conflict(f"This appeal was already {appeal.get_status_display().lower()}.", code="already_resolved")
    if not appeal_can_resolve(appeal=appeal, user=moderator):
        raise Forbidden("Another moderator must review an appeal against your own decision.", code="own_decision")
    post = Post.objects.select_related("source").get(pk=appeal.post_id)
    removed = post.status in REMOVED_STATUSES
    label = appeal_outcome_label(outcome=outcome, removed=removed)
    doing = f"{'upholding' if outcome == 'uphold' else 'overturning'} this {'removal' if removed else 'approval'}"
    reason_code_check(label=label, reason_code=reason_code, doing=doing)
    if outcome == "overturn":
        decision_record(post=post, moderator=moderator, label=label, reason_code=reason_code, note=note, override=True)
        post.refresh_from_db(fields=["status", "status_changed_at"])
    appeal.status = OUTCOMES[outcome]
    appeal.resolved_by = moderator
    appeal.resolved_at = timezone.now()
    appeal.resolution_reason_code = reason_code
    appeal.resolution_note = note.strip()
    appeal.save(update_fields=["status", "resolved_by", "resolved_at", "resolution_reason_code", "resolution_note"])
    entry = audit_record(
        actor=moderator,
        action=f"appeal.{outcome}",
        target=appeal,
        before={"status": AppealStatus.PENDING, "post_status": appeal.appealed_status},
        after={"status": appeal.status, "post_status": post.status, "reason_code": reason_code},
    )
    data = {
        "appeal": {"id": appeal.pk, "outcome": appeal.status, "resolved_at": appeal.resolved_at.isoformat()},
        "post": {"id": post.pk, "external_id": post.external_id, "status": post.status},
        "reason_code": reason_code,
        "note": appeal.resolution_note,
    }
    platform_event.send(
        sender=Appeal, sources=[post.source], event_type=EVENT_APPEAL, key=str(entry.pk), data=data, post=post
    )
    return appeal
