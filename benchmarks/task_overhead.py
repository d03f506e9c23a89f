"""Worker CPU per Celery message that has nothing to score: what a scoring message costs apart
from the scoring itself (the reason one-post-per-request ingest publishes one kick per burst,
scoring.workqueue, not one message per post).

A real Celery worker (the flags of benchmarks/e2e_pipeline.py) drains --messages score_batch
messages of one post each, for posts that are already scored: the task body is then one Redis
MGET (the done markers) and, when the marker has expired, one primary-key SELECT. The worker's CPU over the
drain (its process session: the main process and the pool) divided by the messages is
Celery's and kombu's per-message machinery plus that small body. Each --pools entry is
measured in turn with a fresh worker, prefork (the deployed pool) first as the baseline.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db with scored posts> \\
    CACHE_URL=redis://127.0.0.1:6379/13 \\
    python benchmarks/task_overhead.py --messages 2000 --pools prefork,threads,solo

The broker is a private redis-server started for the run (benchmarks/private_redis.py), so its
queue starts empty and no shared Redis database is touched; the cache is the environment's
(nothing is deleted there). Prints a table and writes JSON. Never part of the tests."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

from e2e_pipeline import session_cpu_s, start_worker  # noqa: E402 - benchmarks/ is on sys.path
from private_redis import start_private_redis  # noqa: E402


def measure(pool: str, concurrency: int, post_ids: list[int], broker: Any, log_path: Path) -> dict[str, Any]:
    from scoring import tasks

    worker_args = argparse.Namespace(concurrency=concurrency, prefetch=4)
    worker = start_worker(dict(os.environ), worker_args, log_path, pool=pool)
    try:
        time.sleep(2.0)  # the pool's start-up work is not the messages'
        before = session_cpu_s(worker.pid)
        started = time.perf_counter()
        publish_cpu = time.process_time()
        for post_id in post_ids:
            tasks.score_batch.delay([post_id])
        publish_cpu = time.process_time() - publish_cpu
        deadline = time.monotonic() + 600
        while broker.llen("celery") > 0:
            if time.monotonic() > deadline:
                raise SystemExit(f"worker ({pool}) did not drain the queue within 600 s")
            time.sleep(0.05)
        time.sleep(1.0)  # the last prefetched messages run after the queue is empty
        drained_s = time.perf_counter() - started
        cpu = session_cpu_s(worker.pid) - before
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    n = len(post_ids)
    return {
        "pool": pool,
        "concurrency": concurrency,
        "messages": n,
        "worker_cpu_ms_per_message": round(1000 * cpu / n, 3),
        "publish_cpu_ms_per_message": round(1000 * publish_cpu / n, 3),
        "drain_messages_per_s": round(n / drained_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--pools", default="prefork,threads,solo", help="Celery pools, the first is the baseline")
    parser.add_argument("--concurrency", type=int, default=2, help="pool size (solo ignores it)")
    parser.add_argument("--json", type=Path, default=REPO / "benchmarks" / "results" / "task_overhead.json")
    args = parser.parse_args()
    log_dir = Path(tempfile.mkdtemp(prefix="task-overhead-"))
    os.environ["CELERY_BROKER_URL"] = f"{start_private_redis(log_dir)}/0"  # before django.setup()

    import django

    django.setup()
    import redis
    from django.conf import settings

    from moderation.models import Post, PostStatus

    post_ids = list(
        Post.objects.exclude(status=PostStatus.RECEIVED).order_by("id").values_list("id", flat=True)[: args.messages]
    )
    if len(post_ids) < args.messages:
        raise SystemExit(f"the database has {len(post_ids)} scored posts; run e2e_load.py on it first")
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    rows = [
        measure(pool, args.concurrency, post_ids, broker, log_dir / f"task-overhead-{pool}.log")
        for pool in args.pools.split(",")
        if pool
    ]
    base = rows[0]["worker_cpu_ms_per_message"]
    print(f"\n{'pool':<10} {'messages':>9} {'worker CPU ms/msg':>18} {'x baseline':>11} {'publish CPU ms/msg':>19}")
    for row in rows:
        ratio = row["worker_cpu_ms_per_message"] / base if base else float("nan")
        print(
            f"{row['pool']:<10} {row['messages']:>9} {row['worker_cpu_ms_per_message']:>18} "
            f"{ratio:>11.2f} {row['publish_cpu_ms_per_message']:>19}"
        )
    result = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
