"""The writes the scoring path makes to moderation's tables, in its one transaction per batch.

moderation owns the Post, Author, Domain and IpAddress tables; the scoring worker writes them
only through these functions. Plain SQL, each one statement whatever the batch size, because
this is the hot path of every scored post: the ORM's bulk_update (a CASE WHEN per row and
field) and select_for_update().values() cost more Python time than the rest of the write
transaction (py-spy of benchmarks/e2e_pipeline.py --mode backlog; cProfile of the ?wait_ms
path), and the Case/When counters were 7 % of the worker's time."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection

from core.counters import CounterAdd, counters_add_together
from core.json_rows import column_fields, recordset, rows_json
from moderation.models import Author, Domain, IpAddress, Post
from moderation.services.source_stats import source_stats_spam_adds


def posts_lock_for_scoring(*, post_ids: Sequence[int], owned_at: datetime | None = None) -> dict[int, dict[str, Any]]:
    """id -> {id, status, report_count} of the posts, row-locked in id order (no deadlock
    between overlapping batches). Plain SQL: the ORM compiling this select_for_update().values()
    on every scoring transaction cost more than running it (?wait_ms path, cProfile).

    With `owned_at`, each row also has "owned": a moderator holds the post at that moment (a
    claim not yet expired, moderation.services.claims) or it is assigned to a moderator
    (moderation.services.assignment). Read under the same lock, so a claim taken after this
    waits for the scoring transaction, and one taken before is seen."""
    if not post_ids:
        return {}
    qn = connection.ops.quote_name
    table = qn(Post._meta.db_table)
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    params: list[Any] = []
    owned = ""
    if owned_at is not None:
        claimed_by, until, assigned = (
            qn(str(f.column)) for f in column_fields(Post, ["claimed_by", "claimed_until", "assigned_to"])
        )
        owned = f", ({assigned} IS NOT NULL OR ({claimed_by} IS NOT NULL AND {until} > %s))"
        params.append(owned_at)
    # Identifiers come from model metadata and every value is a parameter: no injection.
    sql = (
        f"SELECT id, status, report_count{owned} FROM {table} "  # noqa: S608
        f"WHERE id IN ({', '.join(['%s'] * len(post_ids))}) ORDER BY id{lock}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *post_ids])
        if owned_at is None:
            return {
                pk: {"id": pk, "status": status, "report_count": reports} for pk, status, reports in cursor.fetchall()
            }
        return {
            pk: {"id": pk, "status": status, "report_count": reports, "owned": bool(held)}
            for pk, status, reports, held in cursor.fetchall()
        }


def posts_score_fields_write(*, posts: Sequence[Post], fields: Sequence[str]) -> None:
    """Write `fields` of `posts` in one statement. On PostgreSQL plain SQL, UPDATE ...
    FROM (VALUES ...): bulk_update's CASE WHEN per row and field cost more Python time than
    the rest of the write transaction (py-spy, benchmarks/e2e_pipeline.py --mode backlog)."""
    if not posts:
        return
    if connection.vendor != "postgresql":
        Post.objects.bulk_update(posts, list(fields))
        return
    qn = connection.ops.quote_name
    model_fields = column_fields(Post, ["id", *fields])
    columns = [qn(str(f.column)) for f in model_fields]
    sets = ", ".join(f"{c} = v.{c}" for c in columns[1:])
    table = qn(Post._meta.db_table)
    # The rows are one JSON parameter typed by the recordset (core.json_rows):
    # a fixed statement text, not one placeholder per value. The rows are locked already
    # (persist's SELECT ... FOR UPDATE in id order), so the join order does not matter.
    # Identifiers come from model metadata and the rows are one parameter: no injection.
    sql = (
        f"UPDATE {table} SET {sets} FROM {recordset(model_fields, alias='v')} "  # noqa: S608
        f"WHERE {table}.{columns[0]} = v.{columns[0]}"
    )
    try:
        param = rows_json(posts, model_fields, add=False)
    except ValueError:  # a NaN score: JSON has none, the ORM's parameters carry it
        Post.objects.bulk_update(posts, list(fields))
        return
    with connection.cursor() as cursor:
        cursor.execute(sql, [param])


def spam_counters_add(*, posts: Sequence[Post]) -> None:
    """This service's own spam counters (features user_spam_rate, domain/ip spam rate), in
    the scoring transaction: one statement whatever the batch size, the tables in the lock
    order of core.counters (authors -> domains -> IPs -> the sources' domains -> IPs)."""
    domains = Counter(p.link.domain_id for p in posts if p.link is not None)
    ips = Counter(p.ip_id for p in posts if p.ip_id is not None)
    counters_add_together(
        [
            CounterAdd(model=Author, increments=Counter(p.author_id for p in posts), counter="spam_count"),
            CounterAdd(model=Domain, increments=domains, counter="spam_count"),
            CounterAdd(model=IpAddress, increments=ips, counter="spam_count"),
            *source_stats_spam_adds(posts=posts),  # what the features read: each source's own counters
        ]
    )
