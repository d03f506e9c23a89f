"""Reads of posts shared by the API (and anyone who needs a post as its source sees it)."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from core.errors import NotFound
from moderation.models import Decision, Post, Source
from scoring.api import Score


def post_detail_queryset() -> QuerySet[Post]:
    """Posts with author, campaign, scores (newest first) and active decisions (newest first) loaded in
    three queries whatever the number of rows."""
    return Post.objects.select_related("author", "campaign").prefetch_related(
        Prefetch("scores", queryset=Score.objects.order_by("-created_at", "-id"), to_attr="recent_scores"),
        Prefetch(
            "decisions",
            queryset=Decision.objects.filter(undone_at__isnull=True).order_by("-created_at", "-id"),
            to_attr="active_decisions",
        ),
    )


def post_get_for_source(*, source: Source, external_id: str) -> Post:
    """The source's post with this external id; NotFound for unknown ids and other sources' posts."""
    post = post_detail_queryset().filter(source=source, external_id=external_id).first()
    if post is None:
        raise NotFound("No post with this external_id.", code="post_not_found")
    return post
