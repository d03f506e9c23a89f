"""Campaigns at scoring time: near-copies of one text posted within one source by different
accounts, from different domains and IPs, grouped so a moderator decides them once.

For each batch, per source, in a fixed number of statements whatever the batch holds:
1. Each post long enough to compare (CAMPAIGN_MIN_CHARS normalized characters) gets its
   shingles, MinHash and LSH band buckets (scoring.features.near_duplicates).
2. Its buckets are stored (CampaignBucket, one INSERT, committed at once) and then the newest
   CANDIDATES_PER_BUCKET stored posts of each bucket are read back (one statement), with the
   batch's own posts sharing a bucket: the candidates, at most CAMPAIGN_MAX_CANDIDATES per post,
   most shared buckets first.
3. A candidate is a near-copy when the exact Jaccard similarity of the two shingle sets reaches
   CAMPAIGN_JACCARD (LSH alone is approximate both ways). A post stops at its first near-copy
   already in a campaign.
4. In one transaction, the posts with near-copies and those near-copies are row-locked in id
   order and their campaigns read; `campaign_plan` (pure) decides: a post joins the oldest
   campaign among its near-copies; with none in a campaign, the post and its near-copies open
   one when they come from at least CAMPAIGN_MIN_AUTHORS authors. Copies by one author alone
   are that author's cluster, not a campaign; once a campaign exists, that author's further
   copies join it. Campaigns are never merged: a post near two joins the older.

Why no merge is lost between two workers scoring copies of one text at once: each stores its
buckets before it reads, so the one that reads second sees the other's posts (at least one of
the two does). Opening or joining then needs the row locks of every post involved, so when both
saw the same post the second waits for the first's commit and reads the campaign it made. Only
batches that share a post wait for each other; the source's other batches do not.

Tenancy: buckets, candidates and members are all filtered by the post's own source.

A campaign a moderator decided as spam decides its new members (`campaign_action`): held for
review with the reason "campaign decided as spam", or removed where the source opted in
(Source.campaign_member_action)."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from moderation.enforcement_state import author_allowlisted
from moderation.models import Campaign, Label, Post
from moderation.services.campaigns import campaigns_members_add
from scoring.features.near_duplicates import buckets, jaccard, normalized, shingles, signature
from scoring.models import Action, CampaignBucket

logger = logging.getLogger(__name__)

# Stored posts read back per bucket, newest first (the batch's own posts are known without a
# read). A bucket of a common text holds thousands of posts; its newest few find its campaign.
CANDIDATES_PER_BUCKET = 4
CAMPAIGN_SPAM_REASON = "campaign decided as spam"


@dataclass(frozen=True)
class CampaignSettings:
    jaccard: float
    num_perm: int
    min_chars: int
    max_candidates: int
    min_authors: int

    @classmethod
    def current(cls) -> CampaignSettings:
        return cls(
            jaccard=settings.CAMPAIGN_JACCARD,
            num_perm=settings.CAMPAIGN_NUM_PERM,
            min_chars=settings.CAMPAIGN_MIN_CHARS,
            max_candidates=settings.CAMPAIGN_MAX_CANDIDATES,
            min_authors=settings.CAMPAIGN_MIN_AUTHORS,
        )


@dataclass
class Group:
    """Posts to put in one campaign: an existing one (campaign_id) or a new one (None)."""

    campaign_id: int | None
    post_ids: list[int] = field(default_factory=list)


def campaign_plan(
    *,
    new_post_ids: Sequence[int],
    matches: Mapping[int, Sequence[int]],
    campaign_of: Mapping[int, int | None],
    author_of: Mapping[int, int],
    min_authors: int,
) -> list[Group]:
    """Which posts join which campaign, for posts taken in order (pure: no database).

    `matches`: each new post's verified near-copies; `campaign_of` and `author_of`: for every
    post named. A group opened by an earlier post of the batch is joined by a later one like an
    existing campaign."""
    current: dict[int, Group] = {}  # post id -> its group in this plan
    groups: list[Group] = []
    existing: dict[int, Group] = {}
    for post_id in new_post_ids:
        if post_id in current or campaign_of.get(post_id) is not None:
            continue
        near = [m for m in matches.get(post_id, ()) if m != post_id]
        if not near:
            continue
        joined = [current[m] for m in near if m in current]
        known = sorted({c for m in near if m not in current and (c := campaign_of.get(m)) is not None})
        target: Group | None = None
        if known:
            target = existing.get(known[0])
            if target is None:
                target = existing[known[0]] = Group(campaign_id=known[0])
                groups.append(target)
        elif joined:
            target = joined[0]
        members = [post_id] + [m for m in near if m not in current and campaign_of.get(m) is None]
        if target is None:
            if len({author_of[m] for m in members}) < min_authors:
                continue
            target = Group(campaign_id=None)
            groups.append(target)
        for m in members:
            target.post_ids.append(m)
            current[m] = target
    return [g for g in groups if g.post_ids]


def campaigns_detect(*, posts: Sequence[Post], config: CampaignSettings | None = None) -> dict[int, Campaign]:
    """Find the near-copies of the posts and put them in campaigns; post id -> its campaign for
    the posts that are in one (new or already). Sets post.campaign on the given instances."""
    config = config or CampaignSettings.current()
    found: dict[int, Campaign] = {}
    by_source: dict[int, list[tuple[Post, set[bytes]]]] = defaultdict(list)
    for post in sorted(posts, key=lambda p: p.pk):
        if post.campaign_id is not None:
            continue
        if len(normalized(post.text)) >= config.min_chars:
            by_source[post.source_id].append((post, shingles(post.text)))
    now = timezone.now()
    for source_id in sorted(by_source):
        found.update(_detect_in_source(source_id, by_source[source_id], config=config, now=now))
    by_id = {p.pk: p for p in posts}
    for post_id, campaign in found.items():
        if post_id in by_id:
            by_id[post_id].campaign = campaign
    return found


def _detect_in_source(
    source_id: int, items: list[tuple[Post, set[bytes]]], *, config: CampaignSettings, now: datetime
) -> dict[int, Campaign]:
    signatures = [signature(s, num_perm=config.num_perm) for _, s in items]
    keys = [set(k) for k in buckets(signatures, threshold=config.jaccard, num_perm=config.num_perm)]
    own = {post.pk: s for post, s in items}
    # Stored (and committed) before the candidates are read: of two batches racing with copies
    # of one text, the one that reads second sees the other's posts.
    _buckets_store(source_id, [(post.pk, k) for (post, _), k in zip(items, keys, strict=True)])
    in_batch: dict[int, list[int]] = defaultdict(list)
    for (post, _), post_keys in zip(items, keys, strict=True):
        for b in post_keys:
            in_batch[b].append(post.pk)
    stored: dict[int, list[int]] = defaultdict(list)
    for bucket, post_id in _bucket_members(source_id, sorted(in_batch), CANDIDATES_PER_BUCKET, exclude=sorted(own)):
        stored[bucket].append(post_id)
    candidates: dict[int, list[int]] = {}
    for (post, _), post_keys in zip(items, keys, strict=True):
        shared = Counter(p for b in post_keys for p in (*in_batch[b], *stored.get(b, ())) if p != post.pk)
        ranked = sorted(shared.items(), key=lambda kv: (-kv[1], -kv[0]))  # most shared buckets, then newest
        candidates[post.pk] = [p for p, _ in ranked[: config.max_candidates]]
    wanted = {p for ids in candidates.values() for p in ids if p not in own}
    rows = (
        {
            pk: (text, author_id, campaign_id)
            for pk, text, author_id, campaign_id in Post.objects.filter(
                source_id=source_id, pk__in=sorted(wanted)
            ).values_list("pk", "text", "author_id", "campaign_id")
        }
        if wanted
        else {}
    )
    matches = _verified(items, candidates, rows=rows, threshold=config.jaccard)
    if not any(matches.values()):
        return {}
    author_of = {pk: a for pk, (_, a, _) in rows.items()} | {post.pk: post.author_id for post, _ in items}
    involved = sorted({pk for pk, near in matches.items() if near} | {p for near in matches.values() for p in near})
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            _commit_without_waiting()
        # The posts' campaigns as they are now, row-locked in id order until the commit: a
        # concurrent batch joining or opening a campaign with any of these posts waits for this
        # one and then sees its campaign (no second campaign for one text, no lost member).
        campaign_of: dict[int, int | None] = dict(
            Post.objects.select_for_update()
            .filter(source_id=source_id, pk__in=involved)
            .order_by("pk")
            .values_list("pk", "campaign_id")
        )
        plan = campaign_plan(
            new_post_ids=[post.pk for post, _ in items if matches[post.pk]],
            matches=matches,
            campaign_of=campaign_of,
            author_of=author_of,
            min_authors=config.min_authors,
        )
        found = campaigns_members_add(source_id=source_id, groups=[(g.campaign_id, g.post_ids) for g in plan], now=now)
        # Posts of this batch a concurrent batch put in a campaign before this one locked them.
        taken = {pk: cid for pk in own if pk not in found and (cid := campaign_of.get(pk)) is not None}
        if taken:
            campaigns = Campaign.objects.in_bulk(sorted(set(taken.values())))
            found |= {pk: campaigns[cid] for pk, cid in taken.items()}
    # One line per batch: a line per campaign was most of the batch's log volume (a batch of a
    # repeated corpus joins dozens), and the members are on the campaign page.
    logger.info(
        "scoring.campaigns_joined source_id=%s posts=%s campaigns=%s opened=%s",
        source_id,
        len(found),
        len({c.pk for c in found.values()}),
        sum(1 for g in plan if g.campaign_id is None),
    )
    return found


def _commit_without_waiting() -> None:
    """This transaction's commit does not wait for the disk. Safe for what campaign detection
    writes: the scoring transaction that follows (settle) commits synchronously, and its WAL
    flush carries these rows too; a crash before that loses the whole pass, which the retried
    task redoes. A flush of its own would be one more wait on the disk per batch, which the
    pre-publish check (wait_ms) pays in its latency."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit TO OFF")


def _verified(
    items: Sequence[tuple[Post, set[bytes]]],
    candidates: Mapping[int, Sequence[int]],
    *,
    rows: Mapping[int, tuple[str, int, int | None]],
    threshold: float,
) -> dict[int, list[int]]:
    """Each post's candidates whose exact shingle Jaccard reaches the threshold, best candidates
    first. A post stops at its first near-copy already in a campaign: it joins that one, and
    the shingles of its other candidates (most of this step's CPU) are never computed."""
    own = {post.pk: s for post, s in items}
    cache: dict[int, set[bytes]] = {}

    def shingles_of(pk: int) -> set[bytes] | None:
        if pk in own:
            return own[pk]
        if pk not in rows:
            return None
        if pk not in cache:
            cache[pk] = shingles(rows[pk][0])
        return cache[pk]

    matches: dict[int, list[int]] = {}
    for post, s in items:
        near: list[int] = []
        for pk in candidates[post.pk]:
            other = shingles_of(pk)
            if other is None or jaccard(s, other) < threshold:
                continue
            near.append(pk)
            if pk in rows and rows[pk][2] is not None:
                break
        matches[post.pk] = near
    return matches


def _buckets_store(source_id: int, rows: Sequence[tuple[int, set[int]]]) -> None:
    """(post id, its buckets) rows, idempotent. On PostgreSQL one INSERT of two array
    parameters: bulk_create of ~25 model instances per post was most of this step's CPU
    (cProfile, benchmarks/campaigns.py --db)."""
    if connection.vendor != "postgresql":
        CampaignBucket.objects.bulk_create(
            [CampaignBucket(source_id=source_id, bucket=b, post_id=pk) for pk, keys in rows for b in keys],
            ignore_conflicts=True,
        )
        return
    table = connection.ops.quote_name(CampaignBucket._meta.db_table)
    posts = [pk for pk, keys in rows for _ in keys]
    values = [b for _, keys in rows for b in keys]
    # Its own transaction (see the module docstring), committed without waiting for the disk:
    # the campaign transaction that follows waits for its own commit, whose WAL flush carries
    # these rows; a crash before that loses the whole step, which the retried task redoes. In
    # one statement: set_config(..., true) holds for this statement's transaction only. Never
    # inside a caller's transaction, whose commit it would make asynchronous too.
    nowait = "" if connection.in_atomic_block else ", (SELECT set_config('synchronous_commit', 'off', true)) AS s"
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (source_id, bucket, post_id) "  # noqa: S608  (a model's table name)
            f"SELECT %s, r.b, r.p FROM unnest(%s::bigint[], %s::bigint[]) AS r(b, p){nowait} "
            "ON CONFLICT DO NOTHING",
            [source_id, values, posts],
        )


def _bucket_members(
    source_id: int, keys: Sequence[int], per_bucket: int, *, exclude: Sequence[int]
) -> list[tuple[int, int]]:
    """(bucket, post id) for the newest `per_bucket` posts of each bucket outside `exclude`
    (the batch, whose own buckets are known): a long campaign's buckets hold thousands of
    members and its newest few are near-copies enough to find it. On PostgreSQL a LATERAL
    LIMIT per bucket reads only those index entries, backwards."""
    if connection.vendor != "postgresql":
        return list(
            CampaignBucket.objects.filter(source_id=source_id, bucket__in=keys)
            .exclude(post_id__in=list(exclude))
            .annotate(rank=Window(RowNumber(), partition_by=[F("bucket")], order_by=F("post_id").desc()))
            .filter(rank__lte=per_bucket)
            .values_list("bucket", "post_id")
        )
    table = connection.ops.quote_name(CampaignBucket._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT k.b, c.post_id FROM unnest(%s::bigint[]) AS k(b) CROSS JOIN LATERAL ("  # noqa: S608
            f"SELECT post_id FROM {table} WHERE source_id = %s AND bucket = k.b AND post_id <> ALL(%s::bigint[]) "
            "ORDER BY post_id DESC LIMIT %s) AS c",
            [list(keys), source_id, list(exclude), per_bucket],
        )
        return [(int(b), int(p)) for b, p in cursor.fetchall()]


def on_author_erased(sender: object, *, post_ids: Sequence[int], **kwargs: object) -> None:
    """An erased author's texts live on as their posts' MinHash buckets: those go with the
    erasure (moderation.signals.author_erased). Their campaign memberships stay, like the
    posts' decisions."""
    CampaignBucket.objects.filter(post_id__in=list(post_ids)).delete()


def campaign_action(*, post: Post, action: Action, now: datetime) -> tuple[Action, str]:
    """(action, why) for a member of a campaign a moderator decided as spam: removed where its
    source opted in, else never approved automatically (held for review). A trusted author's
    post is held, never removed, as enforcement holds it (scoring.services.enforcement). `why`
    is "" when the campaign changed nothing."""
    campaign = post.campaign if post.campaign_id is not None else None
    if campaign is None or campaign.decided_label != Label.SPAM or action == Action.REMOVE:
        return action, ""
    if post.source.campaign_member_action == "remove" and not author_allowlisted(post.author, now=now):
        return Action.REMOVE, f"{CAMPAIGN_SPAM_REASON}: removed"
    if action == Action.APPROVE:
        return Action.QUEUE, CAMPAIGN_SPAM_REASON
    return action, ""
