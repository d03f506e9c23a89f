"""Post ingest: the write path behind POST /api/v1/posts.

A post is stored once per (source, external_id); sending it again returns the stored post.
The author profile, link, domain and IP rows are upserted with it, their counters bumped in
SQL. Ingest then announces the new posts (moderation.signals.posts_stored) and knows nothing
of what follows: the scoring app listens and publishes its work after the commit
(scoring.receivers)."""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import IntegrityError, OperationalError, connection, transaction

from core import sql_rows
from core.counters import counters_add, upsert_counting
from core.errors import PostContentConflict
from core.json_rows import insert_rows
from core.metrics import POSTS_INGESTED
from moderation.language import post_languages
from moderation.links import link_identity, url_hash
from moderation.models import Domain, IpAddress, Link, Post, Source
from moderation.services.authors import authors_upsert_counting_posts
from moderation.services.content_hash import content_differs, post_content_hash
from moderation.services.source_stats import source_stats_count_posts
from moderation.signals import posts_stored

logger = logging.getLogger(__name__)


def _journey_json(steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for step in steps:
        at = step["at"]
        out.append({"step": step["step"], "at": at.isoformat() if isinstance(at, datetime) else at})
    return out


def _build_post(
    *,
    source: Source,
    payload: Mapping[str, Any],
    author_id: int,
    link: Link | None,
    ip_id: int | None,
    language: str,
) -> Post:
    preview = payload.get("preview") or {}
    text = payload.get("text", "")
    return Post(
        source=source,
        external_id=payload["external_id"],
        author_id=author_id,
        text=text,
        language=language,
        url=link.url if link else "",
        link=link,
        preview_title=preview.get("title", ""),
        preview_description=preview.get("description", ""),
        preview_text=preview.get("text", ""),
        ip_id=ip_id,
        journey=_journey_json(payload.get("journey") or []),
        share_count=payload.get("share_count", 0),
        comment_count=payload.get("comment_count", 0),
        created_at=payload["created_at"],
        content_hash=post_content_hash(payload=payload),
    )


def _stored_post(*, source: Source, external_id: str) -> Post | None:
    # Every ingest runs this first: SQL built once (core.sql_rows), not a compiled queryset.
    return sql_rows.select_first(Post, where="t.source_id = %s AND t.external_id = %s", params=[source.pk, external_id])


def _stored_posts(*, source: Source, external_ids: Sequence[str]) -> list[Post]:
    # The batch path's first statement: SQL built once, not a compiled queryset (7 % of a batch
    # request's CPU, py-spy).
    unique = list(dict.fromkeys(external_ids))
    if not unique:
        return []
    if connection.vendor == "postgresql":
        rows = sql_rows.fetch_all_prepared(_stored_posts_sql(), [unique, source.pk])
        return [found for row in rows if (found := sql_rows.instance(Post, "t", row)) is not None]
    where = f"t.source_id = %s AND t.external_id IN ({sql_rows.in_list(len(unique))})"
    return sql_rows.select_all(Post, where=where, params=[source.pk, *unique])


@functools.cache
def _stored_posts_sql() -> str:
    """One lookup of (source, external_id) per id, whatever the statistics say. Written as
    `source_id = %s AND external_id IN (...)`, the planner chose on the source's estimated row
    count: for a source that was small (or absent) when the table was last analyzed, it read
    every post of the source through the unique index's first column and filtered the ids
    (1.8 ms per batch at 8,000 posts in the source, growing with it; EXPLAIN ANALYZE). A
    LATERAL subquery with LIMIT 1 cannot be flattened into that plan, and its equality
    on both columns is always the unique index's full key. One text for every batch size,
    prepared once per connection."""
    table = connection.ops.quote_name(Post._meta.db_table)
    # Identifiers come from model metadata; the ids and the source are parameters.
    return (
        f"SELECT {sql_rows.select_list(Post, 't')} FROM unnest(%s::text[]) AS e(external_id) "  # noqa: S608
        f"CROSS JOIN LATERAL (SELECT * FROM {table} p WHERE p.source_id = %s "
        "AND p.external_id = e.external_id LIMIT 1) t"
    )


def _check_unchanged(post: Post, payload: Mapping[str, Any]) -> None:
    """Raise PostContentConflict when a resend's content is not the stored post's."""
    if content_differs(stored_hash=post.content_hash, payload=payload):
        raise PostContentConflict(
            "A post with this external_id was stored with different content.",
            extra={"id": post.pk, "content_hash": post.content_hash},
        )


def post_ingest(*, source: Source, payload: Mapping[str, Any]) -> tuple[Post, bool]:
    """Store one validated post payload (see PostInputSerializer). Returns (post, created).

    Idempotent on (source, external_id): a repeat, or the loser of a concurrent insert race,
    gets the stored post and ``created=False`` and changes nothing; a repeat whose content
    differs (moderation.services.content_hash) raises PostContentConflict and changes nothing. A new post is the batch
    path with one item: the same fixed number of statements (see _posts_create), and announced
    (posts_stored, batch=False) inside its transaction."""
    post, created = _post_store(source=source, payload=payload)
    if not created:
        _check_unchanged(post, payload)
    return post, created


def _post_store(*, source: Source, payload: Mapping[str, Any]) -> tuple[Post, bool]:
    """post_ingest without the content check: the stored post or the new one."""
    external_id = payload["external_id"]
    existing = _stored_post(source=source, external_id=external_id)
    if existing is not None:
        return existing, False
    try:
        (post,) = _posts_create(source=source, payloads=[payload])
    except IntegrityError:
        existing = _stored_post(source=source, external_id=external_id)
        if existing is None:
            raise
        return existing, False
    logger.debug("moderation.post_ingested post_id=%s", post.pk)
    return post, True


# Posts per transaction in a batch: big enough to amortize commits and round trips, small
# enough that row locks on shared authors/domains are held briefly.
BATCH_CHUNK = 100


def posts_ingest_batch(*, source: Source, payloads: Sequence[Mapping[str, Any]]) -> list[tuple[Post, bool]]:
    """Ingest validated payloads; returns (post, created) per payload, in order.

    New posts are written in chunks of BATCH_CHUNK, each one transaction with set-based upserts
    of authors, domains, links and IPs and one multi-row insert. A chunk that meets a concurrent
    writer (a duplicate inserted meanwhile, a deadlock) is rolled back and redone post by post
    through post_ingest, so the outcome per item is the same as sending them one at a time.
    A repeat is returned as stored whatever its content: the caller tells a conflict with
    content_differs (the batch answers it per item)."""
    external_ids = [p["external_id"] for p in payloads]
    stored = {p.external_id: p for p in _stored_posts(source=source, external_ids=external_ids)}
    fresh: dict[str, Mapping[str, Any]] = {}
    for payload in payloads:
        if payload["external_id"] not in stored:
            fresh.setdefault(payload["external_id"], payload)  # first occurrence wins, as sequentially
    created_ids: set[str] = set()
    pending = list(fresh.values())
    to_score: list[int] = []
    try:
        _chunks_create(source=source, pending=pending, stored=stored, created_ids=created_ids, to_score=to_score)
    finally:
        # Announced once the chunks committed, all of the request's new posts together (each
        # chunk is its own transaction; a later chunk failing does not hide the earlier ones).
        if to_score:
            posts_stored.send(sender=Post, post_ids=to_score, batch=True)
    results: list[tuple[Post, bool]] = []
    for external_id in external_ids:
        created = external_id in created_ids
        created_ids.discard(external_id)  # a repeat later in the same batch is "existing"
        results.append((stored[external_id], created))
    return results


def _chunks_create(
    *,
    source: Source,
    pending: list[Mapping[str, Any]],
    stored: dict[str, Post],
    created_ids: set[str],
    to_score: list[int],
) -> None:
    for start in range(0, len(pending), BATCH_CHUNK):
        chunk = pending[start : start + BATCH_CHUNK]
        try:
            posts = _posts_create(source=source, payloads=chunk, announce=False)
        except (IntegrityError, OperationalError) as exc:
            if isinstance(exc, OperationalError) and getattr(exc.__cause__, "sqlstate", None) != "40P01":
                raise
            logger.info("moderation.batch_chunk_fallback reason=%s", type(exc).__name__)
            posts = []
            for payload in chunk:
                post, created = _post_store(source=source, payload=payload)
                stored[post.external_id] = post
                if created:
                    created_ids.add(post.external_id)
        for post in posts:
            stored[post.external_id] = post
            created_ids.add(post.external_id)
            to_score.append(post.pk)


def _posts_create(
    *,
    source: Source,
    payloads: Sequence[Mapping[str, Any]],
    announce: bool = True,
) -> list[Post]:
    """New posts (distinct external_ids) and everything they reference in one transaction, in a
    number of statements that does not grow with len(payloads): authors upserted with their
    counter, links (and their domains) found or created, IPs upserted with their counter, one
    multi-row post insert, and the announcement (posts_stored) as the transaction's last step;
    `announce=False`: the caller announces (the batch path, once for the request). Raises
    IntegrityError when one of the posts exists (a concurrent insert won); everything rolls
    back with it, counters included.

    Rows are locked in the order every writer of these counters uses, authors -> links ->
    domains -> IPs, then the per-source link -> domain -> IP counters (the scoring worker's
    spam counters: authors -> domains -> IPs -> per-source domains -> IPs), by
    ascending primary key within a table (core.counters), so concurrent writers
    wait for each other rather than deadlock."""
    profiles: dict[str, dict[str, Any]] = {}
    for payload in payloads:
        data = dict(payload["author"])
        profiles.setdefault(data.pop("external_id"), {}).update(data)  # later posts carry fresher profiles
    author_posts = Counter(p["author"]["external_id"] for p in payloads)
    ip_posts = Counter(p["ip"] for p in payloads if p.get("ip"))
    addresses = sorted(ip_posts)
    # Detected where every new post passes, on the texts already in memory, all of them
    # together and before the transaction (moderation.language): no query.
    languages = post_languages([(p.get("text", ""), (p.get("preview") or {}).get("text", "")) for p in payloads])
    with transaction.atomic():
        authors = authors_upsert_counting_posts(source=source, profiles=profiles, new_posts=author_posts)
        links = _links_upsert_counting(url_posts=Counter(p["url"] for p in payloads if p.get("url")))
        counters_add(model=Domain, increments=Counter(links[p["url"]].domain_id for p in payloads if p.get("url")))
        ip_rows = [IpAddress(address=a, post_count=ip_posts[a]) for a in addresses]
        ips = dict(zip(addresses, upsert_counting(rows=ip_rows, unique=["address"]), strict=True))
        # What the features read: this source's own counters (moderation.services.source_stats).
        source_stats_count_posts(
            source_id=source.pk,
            link_posts=Counter(links[p["url"]].pk for p in payloads if p.get("url")),
            domain_posts=Counter(links[p["url"]].domain_id for p in payloads if p.get("url")),
            ip_posts=Counter(ips[p["ip"]] for p in payloads if p.get("ip")),
        )
        posts = [
            _build_post(
                source=source,
                payload=payload,
                author_id=authors[payload["author"]["external_id"]],
                link=links[payload["url"]] if payload.get("url") else None,
                ip_id=ips[payload["ip"]] if payload.get("ip") else None,
                language=language,
            )
            for payload, language in zip(payloads, languages, strict=True)
        ]
        insert_rows(posts)  # bulk_create's effect, one JSON parameter (json_rows)
        if announce:  # inside the transaction: a receiver may act before the post is visible
            posts_stored.send(sender=Post, post_ids=[post.pk for post in posts], batch=False)
    POSTS_INGESTED.inc(len(posts))  # once per transaction, not per post
    return posts


def _links_upsert_counting(*, url_posts: Counter[str]) -> dict[str, Link]:
    """The Link of every URL (as sent) with its post counter raised by its posts, created with
    its Domain on first sight: one SELECT of the domains and one upsert of the links (plus an
    insert and a re-read for domains never seen before). Domain counters are the caller's.
    The returned rows carry pk, url, host and domain_id; their post_count is this increment."""
    if not url_posts:
        return {}
    identity = {url: link_identity(url) for url in url_posts}
    names = sorted({domain for _, _, domain in identity.values()})
    domains = dict(Domain.objects.filter(name__in=names).values_list("name", "id"))
    absent = [n for n in names if n not in domains]
    if absent:
        Domain.objects.bulk_create([Domain(name=n) for n in absent], ignore_conflicts=True)
        domains.update(Domain.objects.filter(name__in=absent).values_list("name", "id"))
    # Several URLs as sent can be one link once normalized: one row per hash, counts summed.
    rows: dict[str, Link] = {}
    for url, (normalized, host, domain) in identity.items():
        digest = url_hash(normalized)
        row = rows.setdefault(
            digest, Link(url=normalized, url_hash=digest, host=host, domain_id=domains[domain], post_count=0)
        )
        row.post_count += url_posts[url]
    ordered = [rows[digest] for digest in sorted(rows)]
    for row, pk in zip(ordered, upsert_counting(rows=ordered, unique=["url_hash"]), strict=True):
        row.pk = pk
    return {url: rows[url_hash(normalized)] for url, (normalized, _, _) in identity.items()}
