"""Statements of reasons of automatic removals: the ids of the posts a batch removed are
published after the batch commits, by the harm that removed them (the spam policy, or the abuse
rule); the scoring.record_removal_statements task writes the statements and their events
(moderation.services.statements)."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction

from moderation.categories import SPAM
from moderation.services.statements import statements_for_automatic_removals

logger = logging.getLogger(__name__)


@shared_task(
    name="scoring.record_removal_statements",
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=settings.SCORING_RETRY_BACKOFF_S,
    max_retries=10,
    acks_late=True,
    soft_time_limit=30,
    time_limit=40,
)
def record_removal_statements(post_ids: list[int], category: str = SPAM) -> int:
    """Statements of reasons of the posts a batch removed automatically: written after the
    batch commits, so the scoring transaction does not grow by a statement and an event per
    removal. Idempotent (statements_for_automatic_removals skips posts that have one)."""
    return len(statements_for_automatic_removals(post_ids=post_ids, category=category))


def removal_statements_publish(*, post_ids: list[int], category: str = SPAM) -> None:
    if not post_ids:
        return

    def send() -> None:
        try:
            record_removal_statements.delay(post_ids, category)
        except Exception:  # broker down: scoring stands; the statements are missing until re-run
            logger.warning("scoring.removal_statements_enqueue_failed posts=%s", len(post_ids), exc_info=True)

    transaction.on_commit(send)
