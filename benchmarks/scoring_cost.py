"""What the scoring worker's own work costs per post, in process, without Triton: statements per
batch, the worker's CPU and its PostgreSQL backend's CPU per scored post of
scoring.services.scoring.score_posts (features, decision, the write transaction) with the
tests' fake model client (tests.scoring.pipeline_support.FakeClient), so the figures are the
path outside the model alone, without Celery, Redis or the Triton client.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> \\
    python benchmarks/scoring_cost.py --posts 1280 --batch 64 [--tree /path/to/other/checkout]

The posts are the e2e benchmarks' payloads (benchmarks/e2e_pipeline.payload), stored through
the batch ingest service; the fake client calls a post spam when its text says "win" or
"free" (about one in eight of the SMS test split), so removals and their counters are part of
each batch. --tree runs another checkout's code in the same way (compare it with this one,
alternating, in the same sitting). Never part of the tests."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any
from unittest import mock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--posts", type=int, default=1280, help="posts measured (plus 3 unmeasured batches)")
    parser.add_argument("--batch", type=int, default=64, help="posts per score_posts call")
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1], help="the checkout to run")
    parser.add_argument("--load-repeats", type=int, default=3, help="passes of the scoring load alone, timed after")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    tree = args.tree.resolve()
    sys.path[:0] = [str(tree), str(tree / "benchmarks")]
    os.chdir(tree)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    os.environ["DEBUG"] = "false"

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    call_command("migrate", verbosity=0)
    from e2e_pipeline import payload

    from api.serializers import PostBatchInputSerializer
    from moderation.models import Source
    from moderation.services.ingest import posts_ingest_batch
    from scoring.services.scoring import score_posts
    from tests.scoring.pipeline_support import FakeClient

    def backend_cpu_s() -> float:
        """CPU seconds of this connection's PostgreSQL backend (same machine): /proc/<pid>/stat."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            (pid,) = cursor.fetchone()
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    run = uuid.uuid4().hex[:8]
    source = Source.objects.create(name=f"scoring cost {run}", slug=f"scoring-cost-{run}")
    size, warm = args.batch, 3 * args.batch
    ids: list[int] = []
    with mock.patch("scoring.tasks.score_batch.delay"):  # no worker here: the publishes are dropped
        for start in range(0, warm + args.posts, size):
            body = {"posts": [payload(i, run) for i in range(start, start + size)]}
            serializer = PostBatchInputSerializer(data=body, context={"source": source})
            serializer.is_valid(raise_exception=True)
            ids += [
                post.pk for post, _ in posts_ingest_batch(source=source, payloads=serializer.validated_data["posts"])
            ]

    def spam(item: Any) -> float:
        text = item.text.lower()
        return 0.95 if "win" in text or "free" in text else 0.05

    client = FakeClient(rule=spam)
    score_posts(post_ids=ids[:size], client=client)
    score_posts(post_ids=ids[size : 2 * size], client=client)
    with CaptureQueriesContext(connection) as ctx:
        score_posts(post_ids=ids[2 * size : warm], client=client)
    statements = len(ctx.captured_queries)
    measured = ids[warm:]
    db_cpu, cpu, wall = backend_cpu_s(), time.process_time(), time.perf_counter()
    for start in range(0, len(measured), size):
        score_posts(post_ids=measured[start : start + size], client=client)
    cpu, wall, db_cpu = time.process_time() - cpu, time.perf_counter() - wall, backend_cpu_s() - db_cpu
    out = {
        "tree": str(tree),
        "posts": len(measured),
        "batch": size,
        "statements_per_batch": statements,
        "worker_cpu_ms_per_post": round(1000 * cpu / len(measured), 3),
        "db_cpu_ms_per_post": round(1000 * db_cpu / len(measured), 3),
        "wall_ms_per_post": round(1000 * wall / len(measured), 3),
    }
    # The scoring load alone (posts_with_features: one statement, the instances, the features),
    # the same batches again: the in-process share of the worker's CPU that is Python.
    from scoring.features.extract import posts_with_features

    load_cpu = time.process_time()
    for _ in range(args.load_repeats):
        for start in range(0, len(measured), size):
            posts_with_features(measured[start : start + size])
    load_cpu = time.process_time() - load_cpu
    out["load_cpu_ms_per_post"] = round(1000 * load_cpu / max(1, len(measured) * args.load_repeats), 4)
    print(json.dumps(out), flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
