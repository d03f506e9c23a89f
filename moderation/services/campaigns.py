"""Campaign rows: members joining (from the scoring path, which finds them) and a moderator's
decision on a whole campaign (from moderation.services.bulk, which decides the members).

Every write is scoped to one source: a post of another source is never made a member, whatever
ids the caller passes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime

from django.db import connection
from django.db.models import BigIntegerField, Case, DateTimeField, F, IntegerField, Value, When
from django.db.models.functions import Greatest, Least

from moderation.models import BulkAction, Campaign, Post


def campaigns_members_add(
    *, source_id: int, groups: Sequence[tuple[int | None, Sequence[int]]], now: datetime
) -> dict[int, Campaign]:
    """Add each group's posts (those of `source_id` in no campaign yet) to its campaign, a new
    one where the group's campaign id is None; post id -> its campaign for the posts that
    joined. The counters move by what joined: members by the posts, authors by the authors with
    no earlier post in the campaign, first and last seen by the posts' received times. Running
    it twice leaves the same rows (the second run finds no post left to join).

    A fixed number of statements for any number of groups. Call inside the caller's
    transaction, with the posts row-locked (scoring.services.campaigns), so that two callers
    never move the same post or count the same joining twice."""
    wanted = {pk: i for i, (_, post_ids) in enumerate(groups) for pk in post_ids}
    if not wanted:
        return {}
    rows = list(
        Post.objects.filter(pk__in=list(wanted), source_id=source_id, campaign__isnull=True)
        .order_by("pk")
        .values_list("pk", "author_id", "received_at")
    )
    by_group: dict[int, list[tuple[int, int, datetime]]] = defaultdict(list)
    for pk, author_id, received_at in rows:
        by_group[wanted[pk]].append((pk, author_id, received_at))
    existing = sorted({cid for i in by_group if (cid := groups[i][0]) is not None})
    if existing:
        # Lock the campaigns being joined, in id order, before their counters are read and
        # moved: two batches joining one campaign with posts of one new author would otherwise
        # both count that author. Only this source's campaigns can be joined.
        mine = set(
            Campaign.objects.select_for_update()
            .filter(pk__in=existing, source_id=source_id)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        by_group = {i: m for i, m in by_group.items() if groups[i][0] is None or groups[i][0] in mine}
    if not by_group:
        return {}
    fresh = [i for i in sorted(by_group) if groups[i][0] is None]
    created = Campaign.objects.bulk_create(
        [
            Campaign(
                source_id=source_id,
                member_count=len(by_group[i]),
                author_count=len({a for _, a, _ in by_group[i]}),
                first_seen_at=min(r for _, _, r in by_group[i]),
                last_seen_at=max(r for _, _, r in by_group[i]),
            )
            for i in fresh
        ]
    )
    campaign_of_group = {i: c.pk for i, c in zip(fresh, created, strict=True)}
    campaign_of_group |= {i: cid for i in by_group if (cid := groups[i][0]) is not None}
    _posts_assign({campaign_of_group[i]: [pk for pk, _, _ in members] for i, members in by_group.items()})
    joined_existing = {campaign_of_group[i]: members for i, members in by_group.items() if i not in fresh}
    if joined_existing:
        _counters_add(joined_existing)
    campaigns = Campaign.objects.in_bulk(sorted(set(campaign_of_group.values())))
    return {pk: campaigns[campaign_of_group[i]] for i, members in by_group.items() for pk, _, _ in members}


def _posts_assign(members: dict[int, list[int]]) -> None:
    """campaign id -> post ids, one UPDATE. On PostgreSQL from two arrays: a CASE branch per
    campaign cost the ORM more to compile than the statement cost to run (cProfile,
    benchmarks/campaigns.py --db)."""
    posts = [pk for ids in members.values() for pk in ids]
    if connection.vendor == "postgresql":
        table = connection.ops.quote_name(Post._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {table} AS p SET campaign_id = v.c "  # noqa: S608  (a model's table name)
                "FROM unnest(%s::bigint[], %s::bigint[]) AS v(id, c) WHERE p.id = v.id",
                [posts, [cid for cid, ids in members.items() for _ in ids]],
            )
        return
    Post.objects.filter(pk__in=posts).update(
        campaign_id=Case(
            *[When(pk__in=ids, then=Value(cid)) for cid, ids in members.items()], output_field=BigIntegerField()
        )
    )


def _counters_add(joined: dict[int, list[tuple[int, int, datetime]]]) -> None:
    """Move existing campaigns' counters by their newly joined (post, author, received) rows:
    one read of the joining authors' other posts in those campaigns, one UPDATE."""
    joined_ids = [pk for members in joined.values() for pk, _, _ in members]
    known = set(
        Post.objects.filter(
            campaign_id__in=list(joined), author_id__in=sorted({a for m in joined.values() for _, a, _ in m})
        )
        .exclude(pk__in=joined_ids)
        .values_list("campaign_id", "author_id")
        .distinct()
    )

    def case(values: Mapping[int, object], field: IntegerField | DateTimeField) -> Case:
        return Case(*[When(pk=cid, then=Value(v)) for cid, v in values.items()], output_field=field)

    members = {cid: len(m) for cid, m in joined.items()}
    authors = {cid: len({a for _, a, _ in m if (cid, a) not in known}) for cid, m in joined.items()}
    first = {cid: min(r for _, _, r in m) for cid, m in joined.items()}
    last = {cid: max(r for _, _, r in m) for cid, m in joined.items()}
    if connection.vendor == "postgresql":
        ids = list(joined)
        table = connection.ops.quote_name(Campaign._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {table} AS c SET member_count = c.member_count + v.m, "  # noqa: S608
                "author_count = c.author_count + v.a, first_seen_at = LEAST(c.first_seen_at, v.f), "
                "last_seen_at = GREATEST(c.last_seen_at, v.l) FROM unnest("
                "%s::bigint[], %s::int[], %s::int[], %s::timestamptz[], %s::timestamptz[]) AS v(id, m, a, f, l) "
                "WHERE c.id = v.id",
                [
                    ids,
                    [members[i] for i in ids],
                    [authors[i] for i in ids],
                    [first[i] for i in ids],
                    [last[i] for i in ids],
                ],
            )
        return
    Campaign.objects.filter(pk__in=list(joined)).update(
        member_count=F("member_count") + case(members, IntegerField()),
        author_count=F("author_count") + case(authors, IntegerField()),
        first_seen_at=Least(F("first_seen_at"), case(first, DateTimeField())),
        last_seen_at=Greatest(F("last_seen_at"), case(last, DateTimeField())),
    )


def campaign_decided_set(*, campaign_id: int, bulk: BulkAction) -> None:
    """Remember the moderator's decision on the campaign: its new members follow it."""
    Campaign.objects.filter(pk=campaign_id).update(
        decided_label=bulk.label, decided_at=bulk.created_at, decided_bulk=bulk
    )


def campaign_decided_clear(*, bulk: BulkAction) -> None:
    """Undoing the bulk action that decided a campaign undoes the campaign's decision too."""
    Campaign.objects.filter(decided_bulk=bulk).update(decided_label="", decided_at=None, decided_bulk=None)
