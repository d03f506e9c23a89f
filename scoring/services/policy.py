"""The decision policy: thresholds that map a final spam probability to an action.

Version 1 (data migration scoring.0002_default_decision_policy):
- final >= 0.90  -> REMOVE  (auto_removed)
- final <  0.20  -> APPROVE (auto_approved)
- otherwise      -> QUEUE   (a moderator looks at it)
A post with at least one report is never auto-approved: it is queued instead (somebody
complained, so a human should look), unless the score removes it outright. Likewise a post
whose text, preview, link or behaviour sub-score reaches escalate_threshold (0.90 in v1) is
queued rather than auto-approved: one confident angle is worth a human look (docs/design.md)
even when the fusion tree outvotes it. A post confidently detected (at ingest,
moderation.language) in a language the text model was not validated on
(settings.TEXT_VALIDATED_LANGUAGES, listed on the model card) is not auto-approved either: its
text score means nothing there (Spanish spam scored 0.002-0.08 with the English SMS model). Its
source's unvalidated_language_action chooses: "queue" (the default) or "score" (decide on the
score as usual); the Score row's routing_reason says "language not validated: <code>".
A post whose text is unfamiliar to the text model (spam_pipeline's UNFAMILIARITY >= 1,
modelops/text/familiarity.py: far from every text it trained on, or mostly words it never saw)
is neither auto-approved nor auto-removed on its text alone: the text score means little
there. It is removed only when its link, preview or behaviour score alone reaches the remove
threshold. Its source's unfamiliar_text_action chooses: "queue" (the default) or "score"; the
routing_reason says "unfamiliar text (<measure> x the limit)".

Policies are append-only: an edit creates a new version, makes it the active one and writes
an AuditLog row, so every Score points at the exact thresholds that decided it."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max

from core import sql_rows
from core.errors import ApplicationError, NotFound
from moderation.language import UNDETERMINED
from moderation.models import AuditLog, Post, UnfamiliarTextAction, UnvalidatedLanguageAction
from scoring.models import Action, DecisionPolicy

DEFAULT_REMOVE_THRESHOLD = 0.9
DEFAULT_APPROVE_THRESHOLD = 0.2
DEFAULT_ESCALATE_THRESHOLD = 0.9


def policy_active() -> DecisionPolicy:
    """The active policy. When the table is empty (a flushed test database, a fresh install
    that skipped the data migration) version 1 is created with the documented defaults."""
    # Every scoring transaction reads it: SQL built once (core.sql_rows), not a queryset.
    policy = sql_rows.select_first(DecisionPolicy, where="t.is_active")
    if policy is not None:
        return policy
    if DecisionPolicy.objects.exists():
        raise NotFound("no active decision policy; activate one in admin")
    with transaction.atomic():
        policy, _ = DecisionPolicy.objects.get_or_create(
            version=1,
            defaults={
                "remove_threshold": DEFAULT_REMOVE_THRESHOLD,
                "approve_threshold": DEFAULT_APPROVE_THRESHOLD,
                "escalate_threshold": DEFAULT_ESCALATE_THRESHOLD,
                "is_active": True,
                "note": "Default: auto-remove >= 0.90, auto-approve < 0.20, queue in between.",
            },
        )
    return policy


def policy_decide(
    *,
    policy: DecisionPolicy,
    final_score: float,
    report_count: int,
    sub_scores: Iterable[float | None] = (),
    language_unvalidated: bool = False,
    unfamiliar: bool = False,
) -> Action:
    """The action for one scored post (live scoring); the same rule as policy_actions.
    `sub_scores`: text, preview, link, behaviour, in that order."""
    subs = list(sub_scores)
    (action,) = policy_actions(
        policy=policy,
        final_scores=np.asarray([final_score], dtype=np.float64),
        report_counts=np.asarray([report_count], dtype=np.float64),
        strongest_sub_scores=np.asarray([strongest_sub_score(subs)], dtype=np.float64),
        languages_unvalidated=np.asarray([language_unvalidated], dtype=bool),
        unfamiliar=np.asarray([unfamiliar], dtype=bool),
        strongest_context_scores=np.asarray([strongest_sub_score(subs[1:])], dtype=np.float64),
    )
    return Action(action)


def language_routing_reason(post: Post) -> str:
    """ "language not validated: <code>" when the post's language keeps it from being
    auto-approved (see the module docstring), else "". Reads post.source (joined by the
    scoring paths' one statement, scoring.features.extract)."""
    language = post.language
    if not language or language == UNDETERMINED or language in settings.TEXT_VALIDATED_LANGUAGES:
        return ""
    if post.source.unvalidated_language_action != UnvalidatedLanguageAction.QUEUE:
        return ""
    return f"language not validated: {language}"


def familiarity_routing_reason(post: Post, unfamiliarity: float | None) -> str:
    """ "unfamiliar text (<measure> x the limit)" when the post's text keeps it from being decided
    on its text alone (see the module docstring), else "". None: no familiarity measure."""
    if unfamiliarity is None or unfamiliarity < 1.0:
        return ""
    if post.source.unfamiliar_text_action != UnfamiliarTextAction.QUEUE:
        return ""
    return f"unfamiliar text ({unfamiliarity:.1f} x the limit)"


def strongest_sub_score(sub_scores: Iterable[float | None]) -> float:
    """The highest text/preview/link/behaviour probability; 0 when there is none (a
    short-circuited post, a missing preview)."""
    return max((float(s) for s in sub_scores if s is not None), default=0.0)


def policy_actions(
    *,
    policy: DecisionPolicy,
    final_scores: np.ndarray,
    report_counts: np.ndarray | None = None,
    strongest_sub_scores: np.ndarray | None = None,
    languages_unvalidated: np.ndarray | None = None,
    unfamiliar: np.ndarray | None = None,
    strongest_context_scores: np.ndarray | None = None,
) -> np.ndarray:
    """The action (Action values) for each of many posts: the one rule behind live scoring
    (policy_decide), the threshold what-if and the training evaluation, so a preview or a
    metric can never count differently from what the pipeline does. Missing report counts or
    sub-scores count as none; `languages_unvalidated` (bool per post, language_routing_reason
    non-empty) as validated; `unfamiliar` (bool per post, familiarity_routing_reason non-empty)
    as familiar. `strongest_context_scores`: the highest preview/link/behaviour score per post,
    what may still remove an unfamiliar post."""
    final = np.asarray(final_scores, dtype=np.float64)
    reports = np.zeros_like(final) if report_counts is None else np.asarray(report_counts, dtype=np.float64)
    strongest = np.zeros_like(final) if strongest_sub_scores is None else np.asarray(strongest_sub_scores, np.float64)
    escalates = (policy.escalate_threshold < 1.0) & (np.nan_to_num(strongest) >= policy.escalate_threshold)
    approve = (final < policy.approve_threshold) & (reports == 0) & ~escalates
    if languages_unvalidated is not None:
        approve &= ~np.asarray(languages_unvalidated, dtype=bool)
    remove = final >= policy.remove_threshold
    if unfamiliar is not None:
        odd = np.asarray(unfamiliar, dtype=bool)
        context = np.zeros_like(final) if strongest_context_scores is None else np.asarray(strongest_context_scores)
        approve &= ~odd
        remove &= ~odd | (np.nan_to_num(np.asarray(context, dtype=np.float64)) >= policy.remove_threshold)
    return np.where(remove, Action.REMOVE.value, np.where(approve, Action.APPROVE.value, Action.QUEUE.value))


def _validate(remove_threshold: float, approve_threshold: float, escalate_threshold: float) -> None:
    fields: dict[str, list[str]] = {}
    for name, value in (
        ("remove_threshold", remove_threshold),
        ("approve_threshold", approve_threshold),
        ("escalate_threshold", escalate_threshold),
    ):
        if not 0.0 <= value <= 1.0:
            fields[name] = ["must be between 0 and 1"]
    if not fields and approve_threshold > remove_threshold:
        fields["approve_threshold"] = ["must not exceed remove_threshold"]
    if fields:
        raise ApplicationError("invalid thresholds", code="invalid_policy", fields=fields)


def _snapshot(policy: DecisionPolicy | None) -> dict[str, object]:
    if policy is None:
        return {}
    return {
        "version": policy.version,
        "remove_threshold": policy.remove_threshold,
        "approve_threshold": policy.approve_threshold,
        "escalate_threshold": policy.escalate_threshold,
        "note": policy.note,
    }


@transaction.atomic
def policy_create_version(
    *,
    remove_threshold: float,
    approve_threshold: float,
    note: str = "",
    actor: User | None = None,
    escalate_threshold: float | None = None,
) -> DecisionPolicy:
    """A new active policy version; the previous one stays for the scores that used it.
    escalate_threshold=None keeps the active version's value (editors that only know the two
    main thresholds, such as the calibration page, do not reset it)."""
    # Serialise concurrent edits: the active row is the lock.
    previous = DecisionPolicy.objects.select_for_update().filter(is_active=True).first()
    if escalate_threshold is None:
        escalate_threshold = previous.escalate_threshold if previous is not None else DEFAULT_ESCALATE_THRESHOLD
    _validate(remove_threshold, approve_threshold, escalate_threshold)
    latest = DecisionPolicy.objects.aggregate(v=Max("version"))["v"] or 0
    if previous is not None:
        previous.is_active = False
        previous.save(update_fields=["is_active"])
    policy = DecisionPolicy.objects.create(
        version=latest + 1,
        remove_threshold=remove_threshold,
        approve_threshold=approve_threshold,
        escalate_threshold=escalate_threshold,
        note=note,
        is_active=True,
        created_by=actor if actor is not None and actor.pk else None,
    )
    AuditLog.objects.create(
        actor=actor if actor is not None and actor.pk else None,
        action="scoring.policy_version_created",
        target_type="decision_policy",
        target_id=str(policy.pk),
        before=_snapshot(previous),
        after=_snapshot(policy),
    )
    return policy
