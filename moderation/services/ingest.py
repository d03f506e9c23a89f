"""Post ingest: the write path behind POST /api/v1/posts.

A post is stored once per (source, external_id); sending it again returns the stored post.
The author profile, link, domain and IP rows are upserted with it, their counters bumped in
SQL, and scoring is enqueued only after the transaction commits. A broker outage never fails
the ingest: the post stays in `received` and the pipeline's sweeper re-enqueues it."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F

from moderation.links import link_get_or_create
from moderation.models import Author, Domain, IpAddress, Link, Post, Source
from moderation.services.authors import author_upsert

logger = logging.getLogger(__name__)


def score_enqueue(*, post_id: int) -> None:
    """Enqueue scoring once the current transaction commits; never raises.

    Same effect as ``score_post.delay_on_commit(post_id)``, but the publish is wrapped so a
    broker outage is logged instead of turning a committed ingest into an error response."""
    from scoring.tasks import score_post

    def publish() -> None:
        try:
            score_post.delay(post_id)
        except Exception:
            logger.warning("moderation.score_enqueue_failed post_id=%s", post_id, exc_info=True)

    transaction.on_commit(publish)


def ip_get_or_create(*, address: str) -> IpAddress:
    ip = IpAddress.objects.filter(address=address).first()
    if ip is None:
        ip, _ = IpAddress.objects.get_or_create(address=address)
    return ip


def _journey_json(steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for step in steps:
        at = step["at"]
        out.append({"step": step["step"], "at": at.isoformat() if isinstance(at, datetime) else at})
    return out


def _post_create(*, source: Source, payload: Mapping[str, Any]) -> Post:
    author_data = dict(payload["author"])
    author, _ = author_upsert(source=source, external_id=author_data.pop("external_id"), profile=author_data)
    url = payload.get("url") or ""
    link = link_get_or_create(url=url) if url else None
    ip = ip_get_or_create(address=payload["ip"]) if payload.get("ip") else None
    preview = payload.get("preview") or {}
    post = Post.objects.create(
        source=source,
        external_id=payload["external_id"],
        author=author,
        text=payload.get("text", ""),
        url=link.url if link else "",
        link=link,
        preview_title=preview.get("title", ""),
        preview_description=preview.get("description", ""),
        preview_text=preview.get("text", ""),
        ip=ip,
        journey=_journey_json(payload.get("journey") or []),
        share_count=payload.get("share_count", 0),
        comment_count=payload.get("comment_count", 0),
        created_at=payload["created_at"],
    )
    # Counters last: the row locks they take are held only until the commit right after.
    Author.objects.filter(pk=author.pk).update(post_count=F("post_count") + 1)
    if link is not None:
        Link.objects.filter(pk=link.pk).update(post_count=F("post_count") + 1)
        Domain.objects.filter(pk=link.domain_id).update(post_count=F("post_count") + 1)
    if ip is not None:
        IpAddress.objects.filter(pk=ip.pk).update(post_count=F("post_count") + 1)
    return post


def _stored_post(*, source: Source, external_id: str) -> Post | None:
    return Post.objects.filter(source=source, external_id=external_id).first()


def post_ingest(*, source: Source, payload: Mapping[str, Any]) -> tuple[Post, bool]:
    """Store one validated post payload (see PostInputSerializer). Returns (post, created).

    Idempotent on (source, external_id): a repeat, or the loser of a concurrent insert race,
    gets the stored post and ``created=False`` and changes nothing."""
    external_id = payload["external_id"]
    existing = _stored_post(source=source, external_id=external_id)
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            post = _post_create(source=source, payload=payload)
            score_enqueue(post_id=post.pk)
    except IntegrityError:
        existing = _stored_post(source=source, external_id=external_id)
        if existing is None:
            raise
        return existing, False
    logger.debug("moderation.post_ingested post_id=%s", post.pk)
    return post, True


def posts_ingest_batch(*, source: Source, payloads: Sequence[Mapping[str, Any]]) -> list[tuple[Post, bool]]:
    """Ingest validated payloads one by one, each in its own transaction, so one conflict or
    failure never undoes the others and row locks on hot domains are held only briefly."""
    external_ids = [p["external_id"] for p in payloads]
    existing = {p.external_id: p for p in Post.objects.filter(source=source, external_id__in=external_ids)}
    results: list[tuple[Post, bool]] = []
    for payload in payloads:
        known = existing.get(payload["external_id"])
        if known is not None:
            results.append((known, False))
            continue
        post, created = post_ingest(source=source, payload=payload)
        existing[post.external_id] = post
        results.append((post, created))
    return results
