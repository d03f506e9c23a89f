"""Moderator decisions -> decision webhooks; enforcement and appeals -> their events; an author's
erasure -> their Score rows' features. moderation.services.decisions sends
moderation.signals.decision_recorded inside its transaction (bulk undo sends decisions_undone);
the delivery row is written in that transaction and sent after commit, so a webhook never
announces a rolled-back decision. Connected in scoring.apps.ScoringConfig.ready."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from django.db import transaction

from moderation.models import BulkAction, Decision, Post, Source
from scoring.services.webhooks import webhook_enqueue_event, webhook_enqueue_for_decision, webhooks_enqueue_for_undo
from scoring.workqueue import post_keys_delete

logger = logging.getLogger(__name__)


def on_decision_recorded(sender: Any, *, decision: Decision, post: Post, **kwargs: Any) -> None:
    # A savepoint: a failing webhook row must not roll back the moderator's decision.
    try:
        with transaction.atomic():
            webhook_enqueue_for_decision(post, decision=decision)
    except Exception:
        logger.exception("scoring.webhook_enqueue_failed post_id=%s decision_id=%s", post.pk, decision.pk)


def on_decisions_undone(
    sender: Any,
    *,
    bulk_action: BulkAction | None,
    posts: Sequence[Post] = (),
    decisions: Sequence[Decision] = (),
    **kwargs: Any,
) -> None:
    # The platform heard about the decision, so it must hear about the undo: same savepoint rule.
    try:
        with transaction.atomic():
            webhooks_enqueue_for_undo(posts, bulk_action=bulk_action, decision_ids=[d.pk for d in decisions])
    except Exception:
        logger.exception(
            "scoring.webhook_enqueue_failed bulk_action_id=%s (undo)", bulk_action.pk if bulk_action else None
        )


def on_platform_event(
    sender: Any,
    *,
    sources: Sequence[Source],
    event_type: str,
    key: str,
    data: dict[str, Any],
    post: Post | None = None,
    **kwargs: Any,
) -> None:
    # Same savepoint rule: the enforcement or the appeal stands even if its webhook row fails.
    try:
        with transaction.atomic():
            webhook_enqueue_event(sources=sources, event_type=event_type, key=key, data=data, post=post)
    except Exception:
        logger.exception("scoring.webhook_enqueue_failed event_type=%s key=%s", event_type, key)


def on_author_erased(
    sender: Any, *, source_slug: str, author_external_id: str, post_ids: Sequence[int], **kwargs: Any
) -> None:
    """The author's profile lives on in their posts' Score rows as feature values (account age,
    followers, ...): those go with the erasure. The scores, actions and model versions stay.
    The logged webhook events lose the notes of appeal outcomes on the posts and of
    enforcements on the author, and the author's platform id in those and in the statements of
    reasons sent about them. The scoring queue's
    Redis keys of the posts are deleted after commit; robust: Redis being down must not turn
    an erasure that committed into an error (the keys expire on their own)."""
    from scoring.models import Score, WebhookDelivery

    ids = list(post_ids)
    Score.objects.filter(post_id__in=ids).update(features={}, contributions={})
    about_author = WebhookDelivery.objects.filter(
        source__slug=source_slug,
        payload__data__target__type="author",
        payload__data__target__external_id=author_external_id,
    )
    # Statements of reasons name the author too (moderation.services.statements.statement_data).
    statements = WebhookDelivery.objects.filter(
        source__slug=source_slug,
        event_type="statement_of_reasons",
        payload__data__statement__author_external_id=author_external_id,
    )
    for delivery in {
        d.pk: d for d in [*WebhookDelivery.objects.filter(post_id__in=ids), *about_author, *statements]
    }.values():
        data = delivery.payload.get("data", {})
        if "note" in data:
            data["note"] = ""
        if isinstance(data.get("target"), dict) and data["target"].get("type") == "author":
            data["target"]["external_id"] = ""
        statement = data.get("statement")
        if isinstance(statement, dict) and statement.get("author_external_id") == author_external_id:
            statement["author_external_id"] = ""
            dsa = statement.get("dsa") or {}
            if str(dsa.get("puid", "")).endswith(f":author:{author_external_id}"):
                dsa["puid"] = ""
        delivery.save(update_fields=["payload"])
    transaction.on_commit(lambda: post_keys_delete(post_ids=ids), robust=True)
