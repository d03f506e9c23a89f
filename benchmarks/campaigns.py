"""Campaign detection (scoring.services.campaigns): recall of edited near-copies, false merges
of distinct texts, and CPU per post.

Corpus: the deduplicated SMS collection (modelops.text.data.load_sms_splits, all splits). Each
spam text long enough to compare (CAMPAIGN_MIN_CHARS) seeds a family of itself and 4 copies,
each with 2 random small edits: two adjacent words swapped, a number changed, a URL changed or
added, punctuation changed, a word dropped, upper case. Every text of the collection is
indexed as its own post with the copies; a pair is merged when it shares an LSH bucket
(datasketch banding, as scoring does) and its exact shingle Jaccard reaches the threshold.

- copy recall: share of copies merged with at least one member of their family;
- family recall: share of families whose 5 members all end up in one connected group (what
  campaign_plan builds: a post joins the campaign of any near-copy);
- ham texts merged: share of distinct ham texts merged with any other original text (the
  collection is deduplicated, so any merge there is a false one); spam originals merged with
  another original are reported apart: the collection holds real template families.
- CPU per post: shingles + MinHash + buckets for batches of 64 (the scoring batch), and the
  exact Jaccard checks, in process CPU time.
- With --db, the whole scoring-time step (scoring.services.campaigns.campaigns_detect) on the
  same posts in batches of 64 against DATABASE_URL's PostgreSQL (migrated first; the rows are
  written under a throwaway source and deleted at the end): this process's CPU and the wall
  time per post (the wall time includes PostgreSQL's work), and the campaigns it formed; then
  100 single posts one at a time (the pre-publish check's case), wall time p50 and p95.

    DJANGO_SETTINGS_MODULE=config.settings.test .venv/bin/python benchmarks/campaigns.py [--db]

Never part of the tests."""

from __future__ import annotations

import functools
import json
import os
import random
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

COPIES = 4
EDITS_PER_COPY = 2
THRESHOLDS = (0.4, 0.5, 0.6, 0.7)
BATCH = 64
SINGLES = 100
_NUM = re.compile(r"\d+")


def edit(text: str, rng: random.Random) -> str:
    words = text.split()
    kind = rng.choice(["swap", "number", "url", "punct", "drop", "case"])
    if kind == "swap" and len(words) > 3:
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    elif kind == "number":
        if _NUM.search(text):
            return _NUM.sub(lambda m: str(rng.randrange(10 ** len(m.group()))), text, count=1)
        words.insert(rng.randrange(len(words) + 1), str(rng.randrange(100, 9999)))
    elif kind == "url":
        host = (
            f"{rng.choice(['win', 'prize', 'offer', 'deal'])}{rng.randrange(999)}.{rng.choice(['com', 'net', 'biz'])}"
        )
        words.append(f"http://{host}/{rng.randrange(10**6)}")
    elif kind == "punct":
        i = rng.randrange(len(words))
        words[i] = words[i].rstrip("!.,?") + rng.choice(["!!", ".", ",", "?", "!!!", " -"])
    elif kind == "drop" and len(words) > 6:
        del words[rng.randrange(len(words))]
    elif kind == "case":
        return text.upper()
    return " ".join(words)


def _root(parent: list[int], x: int) -> int:
    """Union-find root with path halving: the connected groups campaign_plan would build."""
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def _backend_cpu_s() -> float:
    """CPU seconds of this connection's PostgreSQL backend so far (same machine: /proc)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _grouped(posts: list[tuple[str, int, int]], campaign_of: dict[int, int | None], rows: list) -> dict[str, float]:
    """What the campaigns formed in the database recovered: copies in their original's campaign,
    families (original and copies, every round) all in one campaign."""
    families: dict[int, list[int | None]] = defaultdict(list)
    for (_, family, _), row in zip(posts, rows, strict=True):
        if family >= 0:
            families[family].append(campaign_of[row.pk])
    copies = joined = whole = 0
    for members in families.values():
        whole += members[0] is not None and len(set(members)) == 1
        copies += len(members) - 1
        joined += sum(1 for c in members[1:] if c is not None and c == members[0])
    return {
        "db_copy_recall": round(joined / max(copies, 1), 4),
        "db_family_recall": round(whole / max(len(families), 1), 4),
    }


def db_cost(posts: list[tuple[str, int, int]], *, rounds: int = 1, authors: int = 0) -> dict[str, object]:
    """campaigns_detect over the posts in scoring batches, against the configured database."""
    import uuid

    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from moderation.models import Author, Campaign, Post, Source
    from scoring.models import CampaignBucket
    from scoring.services.campaigns import campaigns_detect

    call_command("migrate", verbosity=0)
    tag = uuid.uuid4().hex[:10]
    source = Source.objects.create(name=f"bench-campaigns-{tag}", slug=f"bench-campaigns-{tag}")
    statements = 0

    def count(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        nonlocal statements
        statements += 1
        return execute(sql, params, many, context)

    try:
        posts = posts * rounds
        people = Author.objects.bulk_create(
            [Author(source=source, external_id=f"a{i}") for i in range(authors or len(posts))], batch_size=2000
        )
        now = timezone.now()
        rows = Post.objects.bulk_create(
            [
                Post(source=source, author=people[i % len(people)], external_id=f"p{i}", text=t, created_at=now)
                for i, (t, _, _) in enumerate(posts)
            ],
            batch_size=2000,
        )
        cpu = wall = pg_cpu = 0.0
        for i in range(0, len(rows), BATCH):
            batch = list(Post.objects.filter(pk__in=[p.pk for p in rows[i : i + BATCH]]).order_by("pk"))
            started_pg = _backend_cpu_s()
            started_cpu, started_wall = time.process_time(), time.perf_counter()
            with connection.execute_wrapper(count):
                campaigns_detect(posts=batch)
            cpu += time.process_time() - started_cpu
            wall += time.perf_counter() - started_wall
            pg_cpu += _backend_cpu_s() - started_pg
        campaigns = Campaign.objects.filter(source=source)
        formed = {
            "campaigns": campaigns.count(),
            "posts_in_campaigns": Post.objects.filter(source=source, campaign__isnull=False).count(),
            "bucket_rows_per_post": round(CampaignBucket.objects.filter(source=source).count() / len(rows), 2),
            **_grouped(posts, dict(Post.objects.filter(source=source).values_list("pk", "campaign_id")), rows),
        }
        # The pre-publish check's case: one new post at a time, against everything indexed above.
        singles = []
        for i, (text, _, _) in enumerate(posts[:: max(1, len(posts) // SINGLES)][:SINGLES]):
            author = people[i % len(people)]
            post = Post.objects.create(
                source=source, author=author, external_id=f"single{i}", text=text + " again", created_at=now
            )
            started_wall = time.perf_counter()
            campaigns_detect(posts=[post])
            singles.append((time.perf_counter() - started_wall) * 1000.0)
        singles.sort()
        return {
            "posts": len(rows),
            "rounds": rounds,
            "authors": len(people),
            "cpu_ms_per_post": round(cpu * 1000.0 / len(rows), 3),
            "postgresql_cpu_ms_per_post": round(pg_cpu * 1000.0 / len(rows), 3),
            "statements_per_batch": round(statements / -(-len(rows) // BATCH), 1),
            "wall_ms_per_post": round(wall * 1000.0 / len(rows), 3),
            **formed,
            "single_post_wall_ms_p50_p95": [
                round(singles[len(singles) // 2], 2),
                round(singles[int(len(singles) * 0.95)], 2),
            ],
        }
    finally:
        CampaignBucket.objects.filter(source=source).delete()
        Post.objects.filter(source=source).delete()
        Campaign.objects.filter(source=source).delete()
        Author.objects.filter(source=source).delete()
        source.delete()


def main() -> None:
    import argparse

    import django

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", action="store_true", help="also time campaigns_detect against DATABASE_URL")
    parser.add_argument(
        "--rounds", type=int, default=1, help="--db: post the corpus this many times over (a long campaign's buckets)"
    )
    parser.add_argument(
        "--authors", type=int, default=0, help="--db: rotate the posts over this many authors (0: one each)"
    )
    parser.add_argument("--skip-recall", action="store_true", help="only the --db step")
    args = parser.parse_args()
    django.setup()
    from django.conf import settings

    from modelops.text.data import load_sms_splits
    from scoring.features.near_duplicates import buckets, jaccard, normalized, shingles, signature

    rng = random.Random(7)
    splits = load_sms_splits()
    texts = splits.train.texts + splits.validation.texts + splits.test.texts
    labels = splits.train.labels + splits.validation.labels + splits.test.labels
    min_chars = settings.CAMPAIGN_MIN_CHARS
    num_perm = settings.CAMPAIGN_NUM_PERM
    posts: list[tuple[str, int, int]] = []  # text, family (-1: none), label
    for text, label in zip(texts, labels, strict=True):
        if len(normalized(text)) < min_chars:
            continue
        family = len(posts) if label == 1 else -1
        posts.append((text, family, label))
        if label == 1:
            for _ in range(COPIES):
                copy = text
                for _ in range(EDITS_PER_COPY):
                    copy = edit(copy, rng)
                posts.append((copy, family, label))
    report: dict[str, object] = {
        "posts": len(posts),
        "families": sum(1 for _, f, label in posts if label == 1 and f >= 0) // (COPIES + 1),
        "ham_texts": sum(1 for _, _, label in posts if label == 0),
        "min_chars": min_chars,
        "num_perm": num_perm,
    }
    sets = [shingles(t) for t, _, _ in posts]
    rows = []
    for threshold in () if args.skip_recall else THRESHOLDS:
        started = time.process_time()
        keys: list[list[int]] = []
        for i in range(0, len(posts), BATCH):
            sigs = [signature(s, num_perm=num_perm) for s in sets[i : i + BATCH]]
            keys += buckets(sigs, threshold=threshold, num_perm=num_perm)
        index_ms = (time.process_time() - started) * 1000.0 / len(posts)
        by_bucket: dict[int, list[int]] = defaultdict(list)
        for i, post_keys in enumerate(keys):
            for b in post_keys:
                by_bucket[b].append(i)
        started = time.process_time()
        candidates = {tuple(sorted((a, b))) for ids in by_bucket.values() for a in ids for b in ids if a < b}
        merged = [(a, b) for a, b in candidates if jaccard(sets[a], sets[b]) >= threshold]
        verify_ms = (time.process_time() - started) * 1000.0 / len(posts)
        parent = list(range(len(posts)))
        find = functools.partial(_root, parent)

        matched_family: set[int] = set()
        merged_any: set[int] = set()
        for a, b in merged:
            parent[find(a)] = find(b)
            merged_any |= {a, b}
            fa, fb = posts[a][1], posts[b][1]
            if fa >= 0 and fa == fb:
                matched_family |= {a, b}
        copies = [i for i, (_, f, _) in enumerate(posts) if f >= 0 and f != i]
        families: dict[int, set[int]] = defaultdict(set)
        for i, (_, f, _) in enumerate(posts):
            if f >= 0:
                families[f].add(find(i))
        originals = [i for i, (_, f, label) in enumerate(posts) if label == 0 or f == i]
        spam_originals = [i for i in originals if posts[i][2] == 1]
        ham = [i for i in originals if posts[i][2] == 0]
        cross_original = {i for a, b in merged for i in (a, b) if posts[a][1] != posts[b][1] or posts[a][1] < 0}
        rows.append(
            {
                "threshold": threshold,
                "bands_rows": f"{len(keys[0])}x{num_perm // len(keys[0])}",
                "copy_recall": round(sum(1 for i in copies if i in matched_family) / len(copies), 4),
                "family_recall": round(sum(1 for g in families.values() if len(g) == 1) / len(families), 4),
                "ham_merged": round(sum(1 for i in ham if i in cross_original) / len(ham), 4),
                "spam_originals_merged_across_families": round(
                    sum(1 for i in spam_originals if i in cross_original) / len(spam_originals), 4
                ),
                "candidate_pairs": len(candidates),
                "cpu_ms_per_post_signature_buckets": round(index_ms, 3),
                "cpu_ms_per_post_jaccard_checks": round(verify_ms, 4),
            }
        )
    report["rows"] = rows
    if args.db:
        report["scoring_step_with_postgresql"] = db_cost(posts, rounds=args.rounds, authors=args.authors)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
