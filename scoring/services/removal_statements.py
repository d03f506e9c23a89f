"""Statements of reasons of automatic removals: the ids of the posts a batch removed are
published after the batch commits; the scoring.record_removal_statements task writes the
statements and their events (moderation.services.statements)."""

from __future__ import annotations

import logging

from django.db import transaction

from core.tasks import task_named

logger = logging.getLogger(__name__)


def removal_statements_publish(*, post_ids: list[int]) -> None:
    if not post_ids:
        return

    def send() -> None:
        try:
            task_named("scoring.record_removal_statements").delay(post_ids)
        except Exception:  # broker down: scoring stands; the statements are missing until re-run
            logger.warning("scoring.removal_statements_enqueue_failed posts=%s", len(post_ids), exc_info=True)

    transaction.on_commit(send)
