"""Celery tasks of the scoring pipeline: thin wrappers that take ids and call one service.

Placeholder until the scoring pipeline lands: it only records that it ran."""

from __future__ import annotations

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="scoring.score_post", acks_late=True)
def score_post(post_id: int) -> None:
    logger.info("scoring.score_post_received post_id=%s", post_id)
