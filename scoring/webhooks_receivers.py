"""Moderator decisions -> decision webhooks. moderation.services.decisions sends
moderation.signals.decision_recorded inside its transaction; the delivery row is written in
that transaction and sent after commit, so a webhook never announces a rolled-back decision.
Connected in scoring.apps.ScoringConfig.ready."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

from moderation.models import Decision, Post
from scoring.services.webhooks import webhook_enqueue_for_decision

logger = logging.getLogger(__name__)


def on_decision_recorded(sender: Any, *, decision: Decision, post: Post, **kwargs: Any) -> None:
    # A savepoint: a failing webhook row must not roll back the moderator's decision.
    try:
        with transaction.atomic():
            webhook_enqueue_for_decision(post, decision=decision)
    except Exception:
        logger.exception("scoring.webhook_enqueue_failed post_id=%s decision_id=%s", post.pk, decision.pk)
