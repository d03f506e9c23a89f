"""Restrictions lighter than a removal or a suspension, which the platform applies on our word:
hide a post pending review, limit an author's posting rate or reach. Each takes a reason (code,
note, optional end), writes one audit entry, tells the platform with a signed `enforcement`
event, produces a statement of reasons, and can be lifted (restriction_lift)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from moderation.models import Author, Post, PostStatus, Restriction, RestrictionKind
from moderation.services.audit import audit_record
from moderation.services.enforcement import (
    EnforcementReason,
    EnforcementRefused,
    enforcement_event,
    enforcement_tell,
    reason_checked,
)
from moderation.services.reasons import reason_category
from moderation.services.statements import Automation, StatementAction, statement_record, statements_reverse

_STATEMENT_ACTION = {
    RestrictionKind.HIDE: StatementAction.HIDE,
    RestrictionKind.LIMIT_RATE: StatementAction.LIMIT_RATE,
    RestrictionKind.LIMIT_REACH: StatementAction.LIMIT_REACH,
}


def _state(restriction: Restriction) -> dict[str, Any]:
    return {
        "kind": restriction.kind,
        "category": restriction.category,
        "reason_code": restriction.reason_code,
        "note": restriction.note,
        "ends_at": restriction.ends_at.isoformat() if restriction.ends_at else None,
        "lifted_at": restriction.lifted_at.isoformat() if restriction.lifted_at else None,
    }


def _target(restriction: Restriction) -> dict[str, Any]:
    if restriction.post_id is not None and restriction.post is not None:
        return {"type": "post", "external_id": restriction.post.external_id}
    return {"type": "author", "external_id": restriction.author.external_id}


def restriction_active(*, author: Author, kind: str, post: Post | None = None) -> Restriction | None:
    rows = Restriction.objects.filter(author=author, kind=kind, lifted_at__isnull=True, post=post)
    now = timezone.now()
    return next((r for r in rows.order_by("-created_at") if r.ends_at is None or r.ends_at > now), None)


@transaction.atomic
def _impose(*, author: Author, post: Post | None, kind: str, actor: Any, reason: EnforcementReason) -> Restriction:
    reason = reason_checked(reason, imposing=True)
    author = Author.objects.select_for_update(of=("self",)).select_related("source").get(pk=author.pk)
    if restriction_active(author=author, kind=kind, post=post) is not None:
        raise EnforcementRefused("This restriction is already in place.", code="already_restricted")
    user = actor if getattr(actor, "is_authenticated", False) else None
    restriction = Restriction.objects.create(
        source=author.source,
        author=author,
        post=post,
        kind=kind,
        category=reason_category(reason.code),
        reason_code=reason.code,
        note=reason.note,
        imposed_by=user,
        ends_at=reason.until,
    )
    entry = audit_record(actor=actor, action=f"restriction.{kind}", target=restriction, after=_state(restriction))
    data = enforcement_event(
        target=_target(restriction), action=kind, reason=reason, actor=actor, at=restriction.created_at
    )
    enforcement_tell(sources=[author.source], key=str(entry.pk), data={**data, "restriction_id": restriction.pk})
    statement_record(
        source=author.source,
        author=author,
        post=post,
        action=_STATEMENT_ACTION[RestrictionKind(kind)],
        category=restriction.category,
        reason_code=reason.code,
        note=reason.note,
        automated_decision=Automation.NONE if user is not None else Automation.PARTIAL,
        automated_detection=bool(post is not None and post.final_score is not None),
        application_date=restriction.created_at,
        end_date=reason.until,
        restriction=restriction,
    )
    return restriction


def post_hide(*, post: Post, actor: Any, reason: EnforcementReason) -> Restriction:
    """Hide a post pending review: the platform stops showing it until a moderator decides
    the post (post_hides_end_on_decision) or the hiding is lifted."""
    if post.status in (PostStatus.REMOVED, PostStatus.AUTO_REMOVED):
        raise EnforcementRefused("The post is removed already.", code="already_removed")
    return _impose(author=post.author, post=post, kind=RestrictionKind.HIDE, actor=actor, reason=reason)


def post_hides_end_on_decision(*, post: Post, actor: Any) -> list[Restriction]:
    """A decision is the review a hiding waited for: its hidings are lifted (audited, the
    platform told), the decision's own event says what happens to the post now."""
    hidden = Restriction.objects.filter(post=post, kind=RestrictionKind.HIDE, lifted_at__isnull=True)
    return [
        restriction_lift(restriction=row, actor=actor, reason=EnforcementReason(note="decided by a moderator"))
        for row in hidden
    ]


def author_limit(*, author: Author, actor: Any, kind: str, reason: EnforcementReason) -> Restriction:
    """Limit an author's posting rate or the reach of their posts (kind: a RestrictionKind limit)."""
    if kind not in (RestrictionKind.LIMIT_RATE, RestrictionKind.LIMIT_REACH):
        raise EnforcementRefused("Unknown limit.", fields={"kind": ["Choose rate or reach."]})
    return _impose(author=author, post=None, kind=kind, actor=actor, reason=reason)


@transaction.atomic
def restriction_lift(*, restriction: Restriction, actor: Any, reason: EnforcementReason | None = None) -> Restriction:
    """Lift a restriction; its statement of reasons is marked reversed and the platform told."""
    reason = reason_checked(reason or EnforcementReason(), imposing=False)
    locked = (
        Restriction.objects.select_for_update(of=("self",))
        .select_related("source", "author", "post")
        .get(pk=restriction.pk)
    )
    if locked.lifted_at is not None:
        raise EnforcementRefused("This restriction was already lifted.", code="already_lifted")
    before = _state(locked)
    now = timezone.now()
    locked.lifted_at = now
    locked.save(update_fields=["lifted_at"])
    entry = audit_record(
        actor=actor,
        action=f"restriction.un{locked.kind}",
        target=locked,
        before=before,
        after={**_state(locked), "reason_code": reason.code, "note": reason.note},
    )
    data = enforcement_event(target=_target(locked), action=f"un{locked.kind}", reason=reason, actor=actor, at=now)
    enforcement_tell(sources=[locked.source], key=str(entry.pk), data={**data, "restriction_id": locked.pk})
    statements_reverse(restriction=locked)
    restriction.lifted_at = now
    return locked
