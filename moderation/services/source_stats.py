"""The per-source link, domain and IP counters the features read (moderation.models
SourceLinkStats, SourceDomainStats, SourceIpStats): one source's traffic, reports and spam
decisions move that source's own counters only, so another source cannot move its scores.

Posts and reports upsert (core.counters.upsert_counting): the row is created with the first
post of the source that names the link, domain or address. Spam decisions update the rows
those posts created. Lock order: these tables come after the all-sources rows (authors ->
links -> domains -> IPs), in the same order among themselves (link -> domain -> IP stats), and
by primary key within a table, as every other counter writer (core.counters)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from django.db import connection, models
from django.db.models import F, Value
from django.db.models.functions import Greatest

from core.counters import Upsert, upsert_counting, upserts_counting
from moderation.models import Post, SourceDomainStats, SourceIpStats, SourceLinkStats


def source_stats_count_posts(
    *, source_id: int, link_posts: Counter[int], domain_posts: Counter[int], ip_posts: Counter[int]
) -> None:
    """Add new posts of one source: link id / domain id / IP id -> posts. A row created here
    marks when this source first saw the link, domain or address. The three tables in one
    statement (core.counters.upserts_counting), in the lock order link -> domain -> IP: one
    round trip at ingest for the three counters."""
    upserts_counting(
        [
            Upsert(
                rows=[
                    SourceLinkStats(source_id=source_id, link_id=k, post_count=n) for k, n in sorted(link_posts.items())
                ],
                unique=["source", "link"],
            ),
            Upsert(
                rows=[
                    SourceDomainStats(source_id=source_id, domain_id=k, post_count=n)
                    for k, n in sorted(domain_posts.items())
                ],
                unique=["source", "domain"],
            ),
            Upsert(
                rows=[SourceIpStats(source_id=source_id, ip_id=k, post_count=n) for k, n in sorted(ip_posts.items())],
                unique=["source", "ip"],
            ),
        ]
    )


def source_stats_add_spam(*, posts: Sequence[Post]) -> None:
    """The posts were decided spam (scoring's auto-removals): their sources' domain and IP spam
    counters go up, in one UPDATE per table whatever the batch size (the scoring transaction's
    statement count does not grow with the batch). The rows exist: ingest creates them with
    the post, and moderation 0022 for posts stored before."""
    domains = Counter((p.source_id, p.link.domain_id) for p in posts if p.link is not None)
    ips = Counter((p.source_id, p.ip_id) for p in posts if p.ip_id is not None)
    _add_by_key(model=SourceDomainStats, key="domain", increments=domains, counter="spam_count")
    _add_by_key(model=SourceIpStats, key="ip", increments=ips, counter="spam_count")


def _add_by_key(*, model: type[models.Model], key: str, increments: Counter[tuple[int, int]], counter: str) -> None:
    """``counter += n`` of the rows (source, key) -> n, in one UPDATE that locks them in primary
    key order first on PostgreSQL (core.counters' lock order), as counters_add does by pk.
    Plain SQL: the ORM has no multi-row UPDATE with a value per row."""
    if not increments:
        return
    qn = connection.ops.quote_name
    table = qn(model._meta.db_table)
    pk, value = qn(str(model._meta.pk.column)), qn(counter)
    source, other = qn("source_id"), qn(f"{key}_id")
    pairs = sorted(increments)
    matches = ", ".join(["(%s, %s)"] * len(pairs))
    cases = " ".join([f"WHEN {table}.{source} = %s AND {table}.{other} = %s THEN %s"] * len(pairs))
    case_params = [v for s, k in pairs for v in (s, k, increments[(s, k)])]
    match_params = [v for pair in pairs for v in pair]
    # Identifiers come from model metadata and every value is a parameter: no injection.
    if connection.vendor == "postgresql":
        sql = (
            f"WITH locked AS (SELECT {pk} FROM {table} WHERE ({source}, {other}) IN ({matches}) "  # noqa: S608
            f"ORDER BY {pk} FOR NO KEY UPDATE) "
            f"UPDATE {table} SET {value} = {table}.{value} + CASE {cases} ELSE 0 END "
            f"FROM locked WHERE {table}.{pk} = locked.{pk}"
        )
        params = match_params + case_params
    else:
        sql = (
            f"UPDATE {table} SET {value} = {table}.{value} + CASE {cases} ELSE 0 END "  # noqa: S608
            f"WHERE ({source}, {other}) IN ({matches})"
        )
        params = case_params + match_params
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def source_stats_move_spam(*, post: Post, delta: int) -> None:
    """A moderator's decision moved one post into (+1) or out of (-1) the spam statuses. Floor
    at 0: rows counted before a decision was recorded here may be behind."""
    new_count = Greatest(F("spam_count") + delta, Value(0))
    if post.link_id is not None and post.link is not None:
        SourceDomainStats.objects.filter(source_id=post.source_id, domain_id=post.link.domain_id).update(
            spam_count=new_count
        )
    if post.ip_id is not None:
        SourceIpStats.objects.filter(source_id=post.source_id, ip_id=post.ip_id).update(spam_count=new_count)


def source_stats_count_report(*, post: Post) -> None:
    """A new reporter on `post` (counted once per reporter and post by the caller)."""
    if post.link_id is None or post.link is None:
        return
    row = SourceDomainStats(source_id=post.source_id, domain_id=post.link.domain_id, report_count=1)
    upsert_counting(rows=[row], unique=["source", "domain"], counter="report_count")
