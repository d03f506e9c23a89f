"""From the database to feature dicts, at scoring time.

`features_for_posts` turns a batch of post ids into the link and behaviour feature dicts laid
out by contracts.feature_schema, plus the texts for the text model. The number of queries is
fixed whatever the batch size (asserted in tests/scoring/test_pipeline_extract.py):

1. the posts with author, link, domain, IP and campaign joined (select_related);
2. the reports on those posts, aggregated per post;
3. how often each author shared each link (user_link_count), grouped;
4. how often each author posted each text (user_post_count), grouped;
5. the posts' own sources' blocks of their domains and IPs (SourceBlock), one lookup;
6-8. the posts' own sources' counters of their links, domains and IPs (SourceLinkStats,
   SourceDomainStats, SourceIpStats), one lookup each.

Every count a feature reads is the post's own source's: another source's traffic, reports
and decisions never move it (tests/test_tenancy_matrix.py). What crosses sources is the global
block and allow lists only, which moderators set (Domain/IpAddress.status).

The scoring worker and the inline pre-publish check read through `posts_with_features`, which
answers all eight in a single statement with the same counts; the grouped queries stay for
callers that already hold the posts, and as the reference the tests compare it with.

The per-value arithmetic (URL parsing, the journey, e-mail providers) lives in pure functions
(scoring.features.url / journey / email / reputation) so the trainers and the pipeline compute
features the same way."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from django.db import connection
from django.db.models import Count, ForeignKey, Model, Q, QuerySet

from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES
from core import sql_rows
from core.urls import InvalidUrl
from moderation.models import (
    Author,
    BlockKind,
    Campaign,
    Domain,
    IpAddress,
    Link,
    Post,
    Report,
    Source,
    SourceBlock,
    SourceDomainStats,
    SourceIpStats,
    SourceLinkStats,
)
from scoring.features.email import email_features
from scoring.features.journey import JourneyError, journey_features
from scoring.features.reputation import ReputationContext, configured_providers, url_reputation
from scoring.features.url import url_lexical_features


class SourceBlockHits(NamedTuple):
    """The reasons of the post's OWN source's blocks that match its domain and its IP (None:
    no such block). Another source's blocks never appear here (moderation.services.blocklists)."""

    domain: str | None = None
    ip: str | None = None


class SourceStats(NamedTuple):
    """The post's own source's counters of its link, domain and IP (None: no row, read as
    counts of zero, first seen with this post)."""

    link: SourceLinkStats | None = None
    domain: SourceDomainStats | None = None
    ip: SourceIpStats | None = None


class PostFeatures(NamedTuple):
    link: dict[str, float]
    behaviour: dict[str, float]
    text: str
    preview_text: str
    # Not model inputs: what the block-list short-circuit reads besides the global statuses.
    source_blocks: SourceBlockHits = SourceBlockHits()


@dataclass(frozen=True)
class ReportStats:
    count: int = 0
    distinct_reporters: int = 0
    spam_reasons: int = 0


# Report reasons that say "spam" (as opposed to abuse, off-topic ...).
SPAM_REPORT_REASONS = frozenset({"spam", "scam", "phishing", "malware", "fraud", "bot"})


def posts_for_scoring(post_ids: Iterable[int]) -> dict[int, Post]:
    """One query: the posts and everything the features and short-circuits read from them."""
    return {p.id: p for p in _scoring_queryset(Post.objects.filter(id__in=list(post_ids)))}


def _scoring_queryset(posts: QuerySet[Post]) -> QuerySet[Post]:
    return posts.select_related("source", "author", "link__domain", "ip", "campaign")


# posts_for_scoring, features_for_posts and features_for_loaded_posts are the ORM reading of
# the features, one query per count: the scoring paths use posts_with_features, and the tests
# hold its single statement to these.
def features_for_posts(post_ids: Iterable[int]) -> dict[int, PostFeatures]:
    return features_for_loaded_posts(posts_for_scoring(post_ids).values())


def features_for_loaded_posts(posts: Iterable[Post]) -> dict[int, PostFeatures]:
    """Features of posts already loaded by `posts_for_scoring` (seven more queries)."""
    posts = list(posts)
    if not posts:
        return {}
    reports = _report_stats([p.id for p in posts])
    link_counts = _user_link_counts(posts)
    text_counts = _user_text_counts(posts)
    blocks = _source_blocks(posts)
    stats = _source_stats(posts)
    return {
        post.id: _post_features(
            post,
            reports=reports.get(post.id, ReportStats()),
            user_link_count=link_counts.get((post.author_id, post.link_id), 0) if post.link_id else 0,
            user_post_count=text_counts.get((post.author_id, post.text), 0) if post.text else 0,
            source_blocks=SourceBlockHits(
                domain=blocks.get((post.source_id, BlockKind.DOMAIN, post.link.domain.name)) if post.link else None,
                ip=blocks.get((post.source_id, BlockKind.IP, str(post.ip.address))) if post.ip else None,
            ),
            stats=SourceStats(
                link=stats[0].get((post.source_id, post.link_id)) if post.link_id is not None else None,
                domain=stats[1].get((post.source_id, post.link.domain_id)) if post.link else None,
                ip=stats[2].get((post.source_id, post.ip_id)) if post.ip_id is not None else None,
            ),
        )
        for post in posts
    }


def post_with_features(post_id: int) -> tuple[Post, PostFeatures] | None:
    """`posts_for_scoring` + `features_for_loaded_posts` for one post in ONE statement (the
    inline check, where every round trip and every compiled queryset is latency)."""
    return posts_with_features([post_id]).get(post_id)


def posts_with_features(post_ids: Iterable[int]) -> dict[int, tuple[Post, PostFeatures]]:
    """`posts_for_scoring` + `features_for_loaded_posts` in ONE statement: the posts joined to
    what posts_for_scoring joins, the report stats, the two per-author counts and the post's own
    source's blocks of its domain and IP (one probe each of the SourceBlock unique index) as
    correlated subqueries counting exactly the rows the grouped queries count for each post, and
    the post's own source's link, domain and IP counters joined on their unique (source, ...)
    keys (tests/scoring/test_pipeline_extract.py compares the two). The SQL is built once per batch
    size from the models' metadata: the ORM compiling the four querysets and building the
    joined instances was a fifth of the scoring worker's CPU (py-spy, benchmarks/e2e_load.py)."""
    ids = list(dict.fromkeys(post_ids))
    if not ids:
        return {}
    rows = sql_rows.fetch_all_prepared(_features_sql(len(ids)), [*sorted(SPAM_REPORT_REASONS), *ids])
    found: dict[int, tuple[Post, PostFeatures]] = {}
    for row in rows:
        post, stats = _instances(row)
        reports, reporters, spam, links, texts, domain_block, ip_block = row[-7:]
        features = _post_features(
            post,
            reports=ReportStats(reports, reporters, spam),
            user_link_count=links,
            user_post_count=texts,
            source_blocks=SourceBlockHits(domain=domain_block, ip=ip_block),
            stats=stats,
        )
        found[post.id] = (post, features)
    return found


class _Table(NamedTuple):
    alias: str
    model: type[Model]
    parent: str  # alias of the table whose foreign key joins this one ("" for the post)
    relation: str  # that foreign key's field name


# What posts_for_scoring's select_related("source", "author", "link__domain", "ip", "campaign") joins.
_TABLES = (
    _Table("p", Post, "", ""),
    _Table("s", Source, "p", "source"),
    _Table("a", Author, "p", "author"),
    _Table("l", Link, "p", "link"),
    _Table("d", Domain, "l", "domain"),
    _Table("i", IpAddress, "p", "ip"),
    _Table("c", Campaign, "p", "campaign"),
)
# The post's own source's counters: (alias, model, the joined row's alias, its foreign key on
# the counter row). Joined on (source_id, that key): the counters' unique index.
_STATS = (
    ("sl", SourceLinkStats, "l", "link"),
    ("sd", SourceDomainStats, "d", "domain"),
    ("si", SourceIpStats, "i", "ip"),
)


def _foreign_key(model: type[Model], name: str) -> ForeignKey:
    field = model._meta.get_field(name)
    assert isinstance(field, ForeignKey)
    return field


@functools.lru_cache(maxsize=256)  # one text per batch size; sizes are bounded by SCORING_BATCH_SIZE
def _features_sql(count: int) -> str:
    qn = connection.ops.quote_name
    models = {t.alias: t.model for t in _TABLES}
    joins = [
        f"LEFT JOIN {qn(t.model._meta.db_table)} {t.alias} ON {t.alias}.{qn(str(t.model._meta.pk.column))} = "
        f"{t.parent}.{qn(str(_foreign_key(models[t.parent], t.relation).column))}"
        for t in _TABLES[1:]
    ]
    for alias, model, joined, key in _STATS:
        table = qn(model._meta.db_table)
        source_column = qn(str(_foreign_key(model, "source").column))
        key_column = qn(str(_foreign_key(model, key).column))
        joins.append(
            f"LEFT JOIN {table} {alias} ON {alias}.{source_column} = p.{qn(str(_foreign_key(Post, 'source').column))} "
            f"AND {alias}.{key_column} = {joined}.{qn(str(_foreign_key(model, key).target_field.column))}"
        )
    report, post = qn(Report._meta.db_table), qn(Post._meta.db_table)
    reasons = ", ".join(["%s"] * len(SPAM_REPORT_REASONS))
    counts = [
        f"(SELECT COUNT(*) FROM {report} r WHERE r.post_id = p.id)",  # noqa: S608
        f"(SELECT COUNT(DISTINCT r.reporter_id) FROM {report} r WHERE r.post_id = p.id)",  # noqa: S608
        f"(SELECT COUNT(*) FROM {report} r WHERE r.post_id = p.id AND r.reason IN ({reasons}))",  # noqa: S608
        f"(SELECT COUNT(*) FROM {post} o WHERE o.author_id = p.author_id AND o.link_id = p.link_id)",  # noqa: S608
        # md5 first: post_author_text_md5_idx (moderation 0008) answers it without reading
        # every post of the author; the texts are then compared, so a collision never counts.
        f"(SELECT COUNT(*) FROM {post} o WHERE o.author_id = p.author_id "  # noqa: S608
        "AND md5(o.text) = md5(p.text) AND o.text = p.text)",
        # The post's own source's blocks only: another source's block never decides this post.
        # NULL when none matches (reason is NOT NULL, so "" is a block without a reason).
        _source_block_sql(BlockKind.DOMAIN, "d.name"),
        _source_block_sql(BlockKind.IP, _ip_text("i")),
    ]
    columns = [sql_rows.select_list(t.model, t.alias) for t in _TABLES]
    columns += [sql_rows.select_list(model, alias) for alias, model, _, _ in _STATS]
    # Identifiers come from model metadata, values are parameters: no injection.
    ids = sql_rows.in_list(count)
    return f"SELECT {', '.join(columns + counts)} FROM {post} p {' '.join(joins)} WHERE p.id IN ({ids})"  # noqa: S608


def _source_block_sql(kind: BlockKind, value: str) -> str:
    table, qn = SourceBlock._meta.db_table, connection.ops.quote_name
    # `kind` is one of BlockKind's literals, `value` a column expression: no client input.
    return (
        f"(SELECT b.reason FROM {qn(table)} b WHERE b.source_id = p.source_id "  # noqa: S608
        f"AND b.kind = '{kind.value}' AND b.value = {value})"
    )


def _ip_text(alias: str) -> str:
    """The address column as text in the form SourceBlock.value stores (PostgreSQL's inet prints
    with a prefix length unless host() is asked; other databases store the text itself)."""
    column = f"{alias}.{connection.ops.quote_name(str(IpAddress._meta.get_field('address').column))}"
    return f"host({column})" if connection.vendor == "postgresql" else column


def _instances(row: Sequence[Any]) -> tuple[Post, SourceStats]:
    """The Post of `row` with its joined rows cached on their foreign keys, as select_related
    leaves them (None for a missing link or IP), and its source's counters."""
    objects: dict[str, Model | None] = {}
    start = 0
    for t in _TABLES:
        end = start + sql_rows.width(t.model)
        objects[t.alias] = sql_rows.instance(t.model, t.alias, row[start:end])
        start = end
    for t in _TABLES[1:]:
        parent = objects[t.parent]
        if parent is not None:
            _foreign_key(type(parent), t.relation).set_cached_value(parent, objects[t.alias])
    post = objects["p"]
    assert isinstance(post, Post)
    counters: list[Any] = []
    for alias, model, _, _ in _STATS:
        end = start + sql_rows.width(model)
        counters.append(sql_rows.instance(model, alias, row[start:end]))
        start = end
    return post, SourceStats(*counters)


def _post_features(
    post: Post,
    *,
    reports: ReportStats,
    user_link_count: int,
    user_post_count: int,
    source_blocks: SourceBlockHits,
    stats: SourceStats,
) -> PostFeatures:
    return PostFeatures(
        link=_link_values(post, stats),
        behaviour=_behaviour_values(
            post,
            reports=reports,
            # A post without a link or text has no pair to count (the grouped queries skip it).
            user_link_count=user_link_count if post.link_id else 0,
            user_post_count=user_post_count if post.text else 0,
        ),
        text=post.text,
        preview_text=preview_text_of(post),
        source_blocks=source_blocks,
    )


def preview_text_of(post: Post) -> str:
    """What the platform told us about the link's destination, as one text ("" when none)."""
    parts = [post.preview_title, post.preview_description, post.preview_text]
    return "\n".join(p.strip() for p in parts if p and p.strip())


def _report_stats(post_ids: list[int]) -> dict[int, ReportStats]:
    rows = (
        Report.objects.filter(post_id__in=post_ids)
        .values("post_id")
        .annotate(
            n=Count("id"),
            reporters=Count("reporter_id", distinct=True),
            spam=Count("id", filter=Q(reason__in=SPAM_REPORT_REASONS)),
        )
        .order_by()
    )
    return {r["post_id"]: ReportStats(r["n"], r["reporters"], r["spam"]) for r in rows}


def _user_link_counts(posts: list[Post]) -> dict[tuple[int, int], int]:
    """(author, link) -> posts. One grouped query over the post_author_idx index."""
    pairs = {(p.author_id, p.link_id) for p in posts if p.link_id}
    if not pairs:
        return {}
    rows = (
        Post.objects.filter(author_id__in={a for a, _ in pairs}, link_id__in={link for _, link in pairs})
        .values("author_id", "link_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {(r["author_id"], r["link_id"]): r["n"] for r in rows if (r["author_id"], r["link_id"]) in pairs}


def _user_text_counts(posts: list[Post]) -> dict[tuple[int, str], int]:
    """(author, text) -> posts: the same message posted again and again."""
    pairs = {(p.author_id, p.text) for p in posts if p.text}
    if not pairs:
        return {}
    rows = (
        Post.objects.filter(author_id__in={a for a, _ in pairs}, text__in={t for _, t in pairs})
        .values("author_id", "text")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {(r["author_id"], r["text"]): r["n"] for r in rows if (r["author_id"], r["text"]) in pairs}


def _source_blocks(posts: list[Post]) -> dict[tuple[int, str, str], str]:
    """(source, kind, value) -> reason of the posts' own sources' blocks of their domains and
    IPs. One query; a key only ever matches the post's own source."""
    wanted = {(p.source_id, BlockKind.DOMAIN.value, p.link.domain.name) for p in posts if p.link is not None}
    wanted |= {(p.source_id, BlockKind.IP.value, str(p.ip.address)) for p in posts if p.ip is not None}
    if not wanted:
        return {}
    rows = SourceBlock.objects.filter(
        source_id__in={s for s, _, _ in wanted}, value__in={v for _, _, v in wanted}
    ).values_list("source_id", "kind", "value", "reason")
    return {(s, k, v): reason for s, k, v, reason in rows if (s, k, v) in wanted}


def _source_stats(
    posts: list[Post],
) -> tuple[
    dict[tuple[int, int], SourceLinkStats],
    dict[tuple[int, int], SourceDomainStats],
    dict[tuple[int, int], SourceIpStats],
]:
    """(source, link / domain / IP) -> the posts' own sources' counters. One query per table."""
    sources = {p.source_id for p in posts}
    links = {p.link_id for p in posts if p.link_id is not None}
    domains = {p.link.domain_id for p in posts if p.link is not None}
    ips = {p.ip_id for p in posts if p.ip_id is not None}
    by_link = SourceLinkStats.objects.filter(source_id__in=sources, link_id__in=links) if links else []
    by_domain = SourceDomainStats.objects.filter(source_id__in=sources, domain_id__in=domains) if domains else []
    by_ip = SourceIpStats.objects.filter(source_id__in=sources, ip_id__in=ips) if ips else []
    return (
        {(r.source_id, r.link_id): r for r in by_link},
        {(r.source_id, r.domain_id): r for r in by_domain},
        {(r.source_id, r.ip_id): r for r in by_ip},
    )


def _hours_between(start: datetime | None, end: datetime) -> float:
    if start is None:
        return 0.0
    return max((end - start).total_seconds() / 3600.0, 0.0)


def _rate(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def _link_values(post: Post, stats: SourceStats) -> dict[str, float]:
    """The link and IP features from the post's own source's counters (`stats`); the link's
    own spelling and the global lists are the only things shared across sources."""
    values = dict.fromkeys(LINK_FEATURES, 0.0)
    values["url_reputation"] = 0.5
    link = post.link
    if link is not None:
        seen = stats.link or SourceLinkStats(first_seen_at=post.received_at)
        domain = stats.domain or SourceDomainStats(first_seen_at=post.received_at)
        values.update(_url_features(link.url))
        values.update(
            {
                "url_present": 1.0,
                "url_age_hours": _hours_between(seen.first_seen_at, post.received_at),
                "domain_age_hours": _hours_between(domain.first_seen_at, post.received_at),
                "url_post_count": float(seen.post_count),
                "domain_post_count": float(domain.post_count),
                "domain_report_count": float(domain.report_count),
                "domain_spam_rate": _rate(domain.spam_count, domain.post_count),
                "url_reputation": _url_reputation(post, seen, domain),
            }
        )
    values["post_share_count"] = float(post.share_count)
    values["post_comment_count"] = float(post.comment_count)
    if post.ip is not None:
        ip = stats.ip or SourceIpStats()
        values["ip_post_count"] = float(ip.post_count)
        values["ip_spam_rate"] = _rate(ip.spam_count, ip.post_count)
    return {name: float(values[name]) for name in LINK_FEATURES}


def _behaviour_values(
    post: Post, *, reports: ReportStats, user_link_count: int, user_post_count: int
) -> dict[str, float]:
    author = post.author
    values: dict[str, float] = {
        "user_age_days": _hours_between(author.account_created_at, post.created_at) / 24.0,
        "user_friends": float(author.friends_count),
        "user_followers": float(author.followers_count),
        "user_verified": 1.0 if author.verified else 0.0,
        "user_posts": float(author.platform_post_count),
        "user_spam_posts": float(author.platform_spam_post_count),
        "user_spam_report": float(author.platform_spam_report_count),
        "user_seen_posts": float(author.post_count),
        "user_spam_rate": _rate(author.spam_count, author.post_count),
        "user_link_count": float(user_link_count),
        "user_post_count": float(user_post_count),
        "report_count": float(reports.count),
        "report_distinct_reporters": float(reports.distinct_reporters),
        "report_spam_reason_count": float(reports.spam_reasons),
    }
    values.update(email_features(author.email_domain))
    values.update(_journey_features(post.journey))
    values.update(campaign_features(post))
    return {name: float(values[name]) for name in BEHAVIOUR_FEATURES}


def with_campaign_features(post: Post, features: PostFeatures) -> PostFeatures:
    """`features` with the campaign features of the post's campaign as it is now: campaign
    detection runs after the features are read and may have put the post in one."""
    return features._replace(behaviour={**features.behaviour, **campaign_features(post)})


def campaign_features(post: Post) -> dict[str, float]:
    """``campaign_size`` and ``campaign_authors`` of the post's campaign (0 when in none), read
    from the campaign joined with the post or set on it by campaign detection: no query."""
    campaign = post.campaign if post.campaign_id is not None else None
    if campaign is None:
        return {"campaign_size": 0.0, "campaign_authors": 0.0}
    return {"campaign_size": float(campaign.member_count), "campaign_authors": float(campaign.author_count)}


def _url_features(url: str) -> dict[str, float]:
    try:
        return url_lexical_features(url)
    except InvalidUrl:  # stored before validation tightened: score it as an odd link
        return {"url_present": 1.0, "url_length": float(len(url))}


def _url_reputation(post: Post, seen: SourceLinkStats, domain: SourceDomainStats) -> float:
    """The global status is a moderator's decision, the one signal meant for every source; the
    history is the post's own source's."""
    link = post.link
    assert link is not None
    context = ReputationContext(
        domain_status=link.domain.status,
        domain_post_count=domain.post_count,
        domain_spam_count=domain.spam_count,
        url_post_count=seen.post_count,
    )
    return url_reputation(link.url, context, providers=configured_providers())


def _journey_features(journey: object) -> dict[str, float]:
    steps = journey if isinstance(journey, list) else []
    try:
        return journey_features(steps)
    except JourneyError:  # the API validates journeys; an unreadable one counts as none
        return journey_features([])
