"""Warnings and the strike ledger: a warning records a strike on the author in the reason's
category, tells the platform (`enforcement` event, action `warn`) and runs the escalation
ladder (moderation.services.ladder), all in one transaction. A strike expires after
STRIKE_EXPIRY_DAYS and can be revoked, which takes it off the ladder's count (a limit or a
suspension it led to stays until lifted: lifting is its own decision)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from moderation.models import Author, Post, Restriction, Strike
from moderation.services.audit import audit_record
from moderation.services.enforcement import (
    EnforcementReason,
    EnforcementRefused,
    enforcement_event,
    enforcement_tell,
    reason_checked,
)
from moderation.services.ladder import ladder_apply
from moderation.services.reasons import reason_category


@dataclass(frozen=True, slots=True)
class Warned:
    strike: Strike
    escalated: Author | Restriction | None  # what the ladder imposed, if anything


def _state(strike: Strike) -> dict[str, Any]:
    return {
        "category": strike.category,
        "reason_code": strike.reason_code,
        "note": strike.note,
        "post_id": strike.post_id,
        "expires_at": strike.expires_at.isoformat(),
        "revoked_at": strike.revoked_at.isoformat() if strike.revoked_at else None,
    }


@transaction.atomic
def author_warn(*, author: Author, actor: Any, reason: EnforcementReason, post: Post | None = None) -> Warned:
    """Warn an author (about one of their posts, or in general): a strike, then the ladder."""
    reason = reason_checked(reason, imposing=True)
    author = Author.objects.select_for_update(of=("self",)).select_related("source").get(pk=author.pk)
    if post is not None and post.author_id != author.pk:
        raise EnforcementRefused("The post is not this author's.", code="not_their_post")
    now = timezone.now()
    strike = Strike.objects.create(
        source=author.source,
        author=author,
        post=post,
        category=reason_category(reason.code),
        reason_code=reason.code,
        note=reason.note,
        issued_by=actor if getattr(actor, "is_authenticated", False) else None,
        created_at=now,
        expires_at=now + timedelta(days=settings.STRIKE_EXPIRY_DAYS),
    )
    entry = audit_record(
        actor=actor, action="author.warn", target=author, after={"strike_id": strike.pk, **_state(strike)}
    )
    data = enforcement_event(
        target={"type": "author", "external_id": author.external_id}, action="warn", reason=reason, actor=actor, at=now
    )
    enforcement_tell(
        sources=[author.source],
        key=str(entry.pk),
        data={
            **data,
            "strike": {"id": strike.pk, "category": strike.category, "expires_at": strike.expires_at.isoformat()},
            "post_external_id": post.external_id if post is not None else None,
        },
    )
    return Warned(strike=strike, escalated=ladder_apply(strike=strike, now=now))


@transaction.atomic
def strike_revoke(*, strike: Strike, actor: Any, reason: EnforcementReason | None = None) -> Strike:
    """Take a warning back: the strike no longer counts and the platform is told."""
    reason = reason_checked(reason or EnforcementReason(), imposing=False)
    locked = Strike.objects.select_for_update(of=("self",)).select_related("source", "author").get(pk=strike.pk)
    if locked.revoked_at is not None:
        raise EnforcementRefused("This warning was already revoked.", code="already_revoked")
    before = _state(locked)
    now = timezone.now()
    locked.revoked_at = now
    locked.save(update_fields=["revoked_at"])
    entry = audit_record(
        actor=actor,
        action="author.unwarn",
        target=locked.author,
        before={"strike_id": locked.pk, **before},
        after={"strike_id": locked.pk, **_state(locked), "reason_code": reason.code, "note": reason.note},
    )
    data = enforcement_event(
        target={"type": "author", "external_id": locked.author.external_id},
        action="unwarn",
        reason=reason,
        actor=actor,
        at=now,
    )
    enforcement_tell(sources=[locked.source], key=str(entry.pk), data={**data, "strike": {"id": locked.pk}})
    strike.revoked_at = now
    return locked
