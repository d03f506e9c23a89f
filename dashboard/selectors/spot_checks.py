"""The Spot checks tab: the automatic decisions drawn for a moderator to confirm
(scoring.services.spot_checks) that still wait, oldest first, as the queue's rows. What their
labels say is moderation.selectors.spot_checks (the metrics page's card)."""

from __future__ import annotations

from dashboard.selectors.queue import PAGE_SIZE, QUEUE_ROW_JOINS, QueueRow, queue_rows
from moderation.models import SPOT_CHECK_WAITING, Post


def spot_check_rows(*, source_slug: str = "", limit: int = PAGE_SIZE) -> list[QueueRow]:
    """The oldest drawn posts still as the models left them, as the queue's rows (oldest first:
    an estimate is only as fresh as its oldest unlabelled draw)."""
    posts = Post.objects.filter(SPOT_CHECK_WAITING)
    if source_slug:
        posts = posts.filter(source__slug=source_slug)
    return queue_rows(list(posts.select_related(*QUEUE_ROW_JOINS).order_by("received_at", "id")[:limit]))
