"""Statements of reasons (DSA Article 17): every restriction - a removal, a post hidden pending
review, a rate or reach limit, a suspension - gets one, in the fields of the EU DSA transparency
database so it can be submitted as it is (docs/statements-of-reasons.md has the mapping).

`statement_fields` is the pure mapping from what happened (StatementFacts) to those fields,
tested table-driven; `statement_record` writes the row and tells the platform with a signed
`statement_of_reasons` event, inside the restriction's own transaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from moderation.categories import ABUSE, NONE, OTHER, SPAM
from moderation.models import (
    Author,
    Decision,
    Post,
    PostStatus,
    ReasonCode,
    Restriction,
    Source,
    StatementOfReasons,
)
from moderation.services.reasons import reason_category
from moderation.signals import platform_event

EVENT_STATEMENT = "statement_of_reasons"


class StatementAction:
    """What the statement is about; also its `action` column and the report's rows."""

    REMOVAL = "removal"
    HIDE = "hide"
    LIMIT_RATE = "limit_rate"
    LIMIT_REACH = "limit_reach"
    SUSPENSION = "suspension"
    ALL = (REMOVAL, HIDE, LIMIT_RATE, LIMIT_REACH, SUSPENSION)


class Automation:
    """Who decided: a moderator, a rule applied to a moderator's decisions (the ladder), or a
    model alone."""

    NONE = "AUTOMATED_DECISION_NOT_AUTOMATED"
    PARTIAL = "AUTOMATED_DECISION_PARTIALLY"
    FULL = "AUTOMATED_DECISION_FULLY"


# The transparency database's first taxonomy; "other" has no harm of its own there, so it is a
# breach of the terms of service like spam.
DSA_CATEGORY: dict[str, str] = {
    SPAM: "STATEMENT_CATEGORY_SCOPE_OF_PLATFORM_SERVICE",
    "scam": "STATEMENT_CATEGORY_SCAMS_AND_FRAUD",
    ABUSE: "STATEMENT_CATEGORY_ILLEGAL_OR_HARMFUL_SPEECH",
    "hate": "STATEMENT_CATEGORY_ILLEGAL_OR_HARMFUL_SPEECH",
    "sexual": "STATEMENT_CATEGORY_PORNOGRAPHY_OR_SEXUALIZED_CONTENT",
    "violence": "STATEMENT_CATEGORY_VIOLENCE",
    "self_harm": "STATEMENT_CATEGORY_SELF_HARM",
    OTHER: "STATEMENT_CATEGORY_SCOPE_OF_PLATFORM_SERVICE",
}

_WHAT = {
    StatementAction.REMOVAL: "The post was removed",
    StatementAction.HIDE: "The post was hidden pending review",
    StatementAction.LIMIT_RATE: "The account's posting rate was limited",
    StatementAction.LIMIT_REACH: "The account's reach was limited",
    StatementAction.SUSPENSION: "The account was suspended",
}
_BY = {
    Automation.NONE: "by a moderator",
    Automation.PARTIAL: "automatically, by the escalation rule for repeated warnings",
    Automation.FULL: "automatically",
}


@dataclass(frozen=True, slots=True)
class StatementFacts:
    action: str
    category: str
    reason_code: str
    reason_label: str
    note: str
    automated_detection: bool
    automated_decision: str
    application_date: datetime
    puid: str
    end_date: datetime | None = None
    content_date: datetime | None = None
    content_language: str = ""
    notified: bool = False  # a user's report (an Article 16 notice) led to it
    territorial_scope: tuple[str, ...] = ()
    terms_url: str = ""
    legal_ground: str = ""  # empty: incompatible with the terms, not illegal


def _day(value: datetime | None) -> str | None:
    return value.astimezone(UTC).date().isoformat() if value is not None else None


def statement_fields(*, facts: StatementFacts) -> dict[str, Any]:
    """The statement in the transparency database's submission fields. Fields that do not
    apply are left out, as the database expects, rather than sent empty. `facts.note` stays
    out of them (see below); it is kept on the restriction itself."""
    action = facts.action
    why = f"{facts.reason_label} ({facts.reason_code})" if facts.reason_label else facts.reason_code
    # No moderator's note: notes are free text about a person, and statements go to a public
    # database that must hold no personal data. The reason and its category say why.
    facts_text = f"{_WHAT[action]} {_BY[facts.automated_decision]} for {why}."
    fields: dict[str, Any] = {
        "decision_facts": facts_text,
        "category": DSA_CATEGORY.get(facts.category, DSA_CATEGORY[OTHER]),
        "content_type": ["CONTENT_TYPE_TEXT"],
        "territorial_scope": list(facts.territorial_scope),
        "application_date": _day(facts.application_date),
        "source_type": "SOURCE_ARTICLE_16" if facts.notified else "SOURCE_VOLUNTARY",
        "automated_detection": "Yes" if facts.automated_detection else "No",
        "automated_decision": facts.automated_decision,
        "puid": facts.puid,
    }
    end = _day(facts.end_date)
    if action == StatementAction.REMOVAL:
        fields["decision_visibility"] = ["DECISION_VISIBILITY_CONTENT_REMOVED"]
    elif action == StatementAction.HIDE:
        fields["decision_visibility"] = ["DECISION_VISIBILITY_CONTENT_DISABLED"]
        fields["end_date_visibility_restriction"] = end
    elif action == StatementAction.LIMIT_REACH:
        fields["decision_visibility"] = ["DECISION_VISIBILITY_CONTENT_DEMOTED"]
        fields["end_date_visibility_restriction"] = end
    elif action == StatementAction.LIMIT_RATE:
        fields["decision_provision"] = "DECISION_PROVISION_PARTIAL_SUSPENSION"
        fields["end_date_service_restriction"] = end
    elif action == StatementAction.SUSPENSION:
        fields["decision_account"] = "DECISION_ACCOUNT_SUSPENDED"
        fields["end_date_account_restriction"] = end
    else:
        raise ValueError(f"unknown restriction {action!r}")
    if facts.legal_ground:
        fields["decision_ground"] = "DECISION_GROUND_ILLEGAL_CONTENT"
        fields["illegal_content_legal_ground"] = facts.legal_ground
        fields["illegal_content_explanation"] = facts_text
    else:
        fields["decision_ground"] = "DECISION_GROUND_INCOMPATIBLE_CONTENT"
        fields["incompatible_content_ground"] = why
        fields["incompatible_content_explanation"] = facts_text
        fields["incompatible_content_illegal"] = "No"
    if facts.terms_url:
        fields["decision_ground_reference_url"] = facts.terms_url
    if facts.content_date is not None:
        fields["content_date"] = _day(facts.content_date)
    language = facts.content_language
    if len(language) == 2 and language.isalpha():
        fields["content_language"] = language.upper()
    return {key: value for key, value in fields.items() if value is not None}


# --- the shell ---------------------------------------------------------------------------------


def _reason_label(code: str) -> str:
    return ReasonCode.objects.filter(code=code).values_list("label", flat=True).first() or ""


def _facts(
    *,
    action: str,
    category: str,
    reason_code: str,
    reason_label: str,
    note: str,
    automated_decision: str,
    automated_detection: bool,
    application_date: datetime,
    end_date: datetime | None,
    puid: str,
    post: Post | None,
) -> StatementFacts:
    return StatementFacts(
        action=action,
        category=category,
        reason_code=reason_code,
        reason_label=reason_label or _reason_label(reason_code),
        note=note,
        automated_detection=automated_detection,
        automated_decision=automated_decision,
        application_date=application_date,
        end_date=end_date,
        content_date=post.created_at if post is not None else None,
        content_language=post.language if post is not None else "",
        notified=bool(post is not None and post.report_count),
        puid=puid,
        territorial_scope=tuple(settings.DSA_TERRITORIAL_SCOPE),
        terms_url=settings.DSA_TERMS_URL,
        legal_ground=settings.DSA_LEGAL_GROUNDS.get(category, ""),
    )


def statement_data(statement: StatementOfReasons) -> dict[str, Any]:
    """The statement as the webhook and the API carry it: the database's fields under `dsa`,
    with what identifies it on this side."""
    return {
        "id": statement.pk,
        "action": statement.action,
        "category": statement.category,
        "decision_id": statement.decision_id,
        "restriction_id": statement.restriction_id,
        "post_external_id": statement.post.external_id if statement.post_id and statement.post else None,
        "author_external_id": statement.author.external_id if statement.author_id and statement.author else None,
        "created_at": statement.created_at.isoformat(),
        "reversed_at": statement.reversed_at.isoformat() if statement.reversed_at else None,
        "dsa": statement.fields,
    }


def statement_record(  # noqa: PLR0913 - the facts of one statement, each a keyword (StatementFacts)
    *,
    source: Source,
    author: Author | None,
    post: Post | None,
    action: str,
    category: str,
    reason_code: str,
    reason_label: str = "",
    note: str = "",
    automated_decision: str = Automation.NONE,
    automated_detection: bool = False,
    application_date: datetime | None = None,
    end_date: datetime | None = None,
    decision: Decision | None = None,
    restriction: Restriction | None = None,
) -> StatementOfReasons:
    """Write the statement of one restriction and send it to the platform. Call inside the
    restriction's transaction: a rolled-back restriction leaves no statement and no event."""
    applied = application_date or timezone.now()
    if post is not None:
        puid = f"{source.slug}:post:{post.external_id}"
    else:
        puid = f"{source.slug}:author:{author.external_id if author else ''}"
    facts = _facts(
        action=action,
        category=category,
        reason_code=reason_code,
        reason_label=reason_label,
        note=note,
        automated_decision=automated_decision,
        automated_detection=automated_detection,
        application_date=applied,
        end_date=end_date,
        puid=puid,
        post=post,
    )
    statement = StatementOfReasons.objects.create(
        source=source,
        author=author,
        post=post,
        decision=decision,
        restriction=restriction,
        action=action,
        category=category,
        automated=automated_decision != Automation.NONE,
        content_date=facts.content_date,
        application_date=applied,
        fields=statement_fields(facts=facts),
    )
    platform_event.send(
        sender=StatementOfReasons,
        sources=[source],
        event_type=EVENT_STATEMENT,
        key=f"statement:{statement.pk}",
        data={"statement": statement_data(statement)},
        post=post,
    )
    return statement


def statements_reverse(*, decisions: Sequence[Decision] = (), restriction: Restriction | None = None) -> int:
    """Mark the statements of undone or overturned decisions, or of a lifted restriction, as
    reversed (the statement itself stays as it was issued)."""
    rows = StatementOfReasons.objects.filter(reversed_at__isnull=True)
    if decisions:
        rows = rows.filter(decision__in=[d.pk for d in decisions])
    elif restriction is not None:
        rows = rows.filter(restriction=restriction)
    else:
        return 0
    return rows.update(reversed_at=timezone.now())


def statement_for_decision(*, decision: Decision, post: Post, prior: Decision | None) -> StatementOfReasons | None:
    """A moderator's removal gets a statement; an approval that replaces a removal (an appeal
    overturned, a moderator changing their mind) reverses the removal's."""
    if post.status != PostStatus.REMOVED:
        if prior is not None:
            statements_reverse(decisions=[prior])
        return None
    return statement_record(
        source=post.source,
        author=post.author,
        post=post,
        action=StatementAction.REMOVAL,
        # The decision took its reason code's category (the ReasonCode row: moderation.categories).
        category=decision.category if decision.category not in ("", NONE) else reason_category(decision.reason_code),
        reason_code=decision.reason_code,
        note=decision.note,
        automated_detection=post.final_score is not None,
        application_date=decision.created_at,
        decision=decision,
    )


# The reason an automatic removal states, by the harm that removed it (the spam policy or the
# abuse rule): the models have no reason code of their own.
AUTOMATIC_REMOVAL_REASON = "automatic-spam"
AUTOMATIC_REMOVAL_LABEL = "Spam detected automatically: the score passed the source's removal threshold"
AUTOMATIC_REMOVALS = {
    SPAM: (AUTOMATIC_REMOVAL_REASON, AUTOMATIC_REMOVAL_LABEL),
    ABUSE: (
        "automatic-abuse",
        "Abuse detected automatically: the abuse score passed the source's removal threshold",
    ),
}


@transaction.atomic
def statements_for_automatic_removals(*, post_ids: Sequence[int], category: str = SPAM) -> list[StatementOfReasons]:
    """Statements of the posts the models removed (scoring publishes their ids after commit).
    Idempotent: a post that already has its automatic removal statement gets no second one,
    and a post no longer auto-removed (a moderator decided since) gets none. `category`: the
    harm that removed them (SPAM or ABUSE)."""
    reason_code, reason_label = AUTOMATIC_REMOVALS.get(category, AUTOMATIC_REMOVALS[SPAM])
    done = StatementOfReasons.objects.filter(
        post_id__in=list(post_ids), action=StatementAction.REMOVAL, decision__isnull=True
    ).values("post_id")
    posts = (
        Post.objects.filter(pk__in=list(post_ids), status=PostStatus.AUTO_REMOVED)
        .exclude(pk__in=done)
        .select_related("source", "author")
        .select_for_update(of=("self",))
        .order_by("pk")
    )
    return [
        statement_record(
            source=post.source,
            author=post.author,
            post=post,
            action=StatementAction.REMOVAL,
            category=category,
            reason_code=reason_code,
            reason_label=reason_label,
            automated_decision=Automation.FULL,
            automated_detection=True,
            application_date=post.status_changed_at,
        )
        for post in posts
    ]


def statements_erase_author(*, author: Author) -> int:
    """An erased author's statements stay (they record what was done) but no longer name
    them: the author-level ones' puid takes the author's erased id. Post-level ones name the
    post, which stays as a tombstone under the same external id."""
    rows = list(StatementOfReasons.objects.filter(author=author, post__isnull=True))
    for row in rows:
        row.fields = {**row.fields, "puid": f"{author.source.slug}:author:{author.external_id}"}
    StatementOfReasons.objects.bulk_update(rows, ["fields"])
    return len(rows)
