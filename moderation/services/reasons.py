"""Reason codes belong to outcomes: a reason applies to spam (a removal, a suspension, a block)
or to not spam (an approval, trust, lifting a block). Every path that records a reason checks
it here, so a record can never say "removed as spam because: legitimate content"."""

from __future__ import annotations

from core.errors import ApplicationError
from moderation.categories import NONE, OTHER, category_for_label
from moderation.models import Label, ReasonCode


def reason_code_check(*, label: str, reason_code: str, doing: str) -> None:
    """Refuse a reason that is unknown, retired or belongs to the other label. `doing` names the
    action in the message ("upholding this removal"), so the moderator knows what to pick."""
    if not reason_code:
        return
    reason = ReasonCode.objects.filter(code=reason_code, is_active=True).first()
    if reason is None:
        message = f"{reason_code!r} is not an active reason code."
    elif reason.applies_to != label:
        message = (
            f"“{reason.label}” is a reason for {reason.get_applies_to_display().lower()}; "
            f"{doing} needs a {Label(label).label.lower()} reason."
        )
    else:
        return
    raise ApplicationError(message, code="invalid_reason_code", fields={"reason_code": [message]})


def reason_category(reason_code: str) -> str:
    """The policy category of a reason code (moderation.categories), from its ReasonCode row: the
    admin sets it, and it is the one source of what a reason is about. A row without one takes
    its label's, as a decision does (spam for a spam reason). "other" for an unknown code and
    for a not-spam reason ("none" names no harm, and a strike, a restriction or a statement
    needs one)."""
    found = ReasonCode.objects.filter(code=reason_code).values_list("category", "applies_to").first()
    if not reason_code or found is None:
        return OTHER
    category, applies_to = found
    category = category or category_for_label(applies_to)
    return category if category != NONE else OTHER
