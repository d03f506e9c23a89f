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

from django.db.models import F, Value
from django.db.models.functions import Greatest

from core.counters import CounterAdd, Upsert, upsert_counting, upserts_counting
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


def source_stats_spam_adds(*, posts: Sequence[Post]) -> list[CounterAdd]:
    """The posts were decided spam (scoring's auto-removals): their sources' domain and IP spam
    counters go up, one UPDATE per table whatever the batch size, which the caller runs with
    the other spam counters in one statement (core.counters.counters_add_together), after the
    all-sources tables (the lock order above). The rows exist: ingest creates them with the
    post, and moderation 0022 for posts stored before."""
    domains = Counter((p.source_id, p.link.domain_id) for p in posts if p.link is not None)
    ips = Counter((p.source_id, p.ip_id) for p in posts if p.ip_id is not None)
    return [
        CounterAdd(model=SourceDomainStats, increments=domains, counter="spam_count", key=("source", "domain")),
        CounterAdd(model=SourceIpStats, increments=ips, counter="spam_count", key=("source", "ip")),
    ]


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
