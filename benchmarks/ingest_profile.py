"""Ingest cost per post, in process: queries per request and CPU per post of POST /api/v1/posts
(one post per request) and POST /api/v1/posts/batch (--batch posts per request), through
Django's test client (the whole middleware + DRF stack, no HTTP server, no worker).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mod_ingest \\
    CACHE_URL=redis://127.0.0.1:6379/5 CELERY_BROKER_URL=redis://127.0.0.1:6379/6 \\
    python benchmarks/ingest_profile.py --posts 400 --batch 50 [--inline] [--profile single|batch|inline]

Scoring tasks are not published (on_commit callbacks run, .delay is replaced by a no-op) so
cpu is the web code's own; db_cpu is the PostgreSQL backend's CPU (same machine, /proc).
Payloads are the e2e benchmarks' (25 authors, 200 IPs, a new link for every third post).
Never part of the tests."""

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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

from e2e_pipeline import payload  # noqa: E402 - benchmarks/ is on sys.path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--posts", type=int, default=400, help="posts per mode")
    parser.add_argument("--batch", type=int, default=50, help="posts per batch request")
    parser.add_argument(
        "--inline",
        action="store_true",
        help="also the pre-publish check (POST /api/v1/posts?wait_ms=50, one post per request) against the "
        "Triton at TRITON_URL, which must be serving the published models",
    )
    parser.add_argument("--profile", choices=["single", "batch", "inline"], help="pyinstrument this mode, print top")
    parser.add_argument("--profile-html", type=Path, help="write the pyinstrument HTML here")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from rest_framework.test import APIClient

    from moderation.models import ALL_SCOPES, Source
    from moderation.services.api_keys import api_key_create

    call_command("migrate", verbosity=0)
    # A real process: ALLOWED_HOSTS from the settings; the test client's default host is 'testserver'.
    from django.conf import settings

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]

    sources: list[Source] = []

    def client_for(run: str) -> APIClient:
        source = Source.objects.create(name=f"ingest profile {run}", slug=f"ingest-profile-{run}")
        sources.append(source)
        _, raw_key = api_key_create(source=source, name="bench", scopes=ALL_SCOPES)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Api-Key {raw_key}")
        return client

    def single(client: APIClient, run: str, n: int, offset: int = 0) -> list[int]:
        codes = []
        for i in range(offset, offset + n):
            codes.append(client.post("/api/v1/posts", payload(i, run), format="json").status_code)
        return codes

    def inline(client: APIClient, run: str, n: int, offset: int = 0) -> list[int]:
        codes = []
        for i in range(offset, offset + n):
            codes.append(client.post("/api/v1/posts?wait_ms=50", payload(i, run), format="json").status_code)
        return codes

    def batch(client: APIClient, run: str, n: int, offset: int = 0) -> list[int]:
        codes = []
        for start in range(offset, offset + n, args.batch):
            body = {"posts": [payload(i, run) for i in range(start, min(start + args.batch, offset + n))]}
            codes.append(client.post("/api/v1/posts/batch", body, format="json").status_code)
        return codes

    def backend_cpu_s() -> float:
        """CPU seconds of this connection's PostgreSQL backend (same machine): /proc/<pid>/stat."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            (pid,) = cursor.fetchone()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            return float("nan")
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    modes = {"single": single, "batch": batch} | ({"inline": inline} if args.inline else {})
    out: dict[str, Any] = {}
    # No worker consumes here: the score_batch publishes are stubbed (single posts: the kick,
    # whose mark then stays for its TTL as if the kick were pending; inline checks that do not
    # decide: the post's own; batches: one per chunk) so nothing piles up in the broker; their
    # cost is in e2e_load's figures.
    with mock.patch("scoring.tasks.score_batch.delay"):
        for name, fn in modes.items():
            run = uuid.uuid4().hex[:8]
            client = client_for(run)
            fn(client, run, min(args.batch, 20))  # warm: imports, key last_used_at, connections
            with CaptureQueriesContext(connection) as ctx:
                first = fn(client, run, args.batch, offset=1000)
            captured = len(ctx.captured_queries)  # now: the deque behind it shifts later
            profiler = None
            if args.profile == name:
                from pyinstrument import Profiler

                profiler = Profiler(interval=0.0005)
                profiler.start()
            db_cpu, cpu, wall = backend_cpu_s(), time.process_time(), time.perf_counter()
            codes = fn(client, run, args.posts, offset=10_000)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            db_cpu = backend_cpu_s() - db_cpu
            if profiler is not None:
                profiler.stop()
                print(profiler.output_text(unicode=False, color=False, show_all=False))
                if args.profile_html:
                    args.profile_html.write_text(profiler.output_html())
            out[name] = {
                "posts": args.posts,
                "requests": len(codes),
                "statuses": sorted(set(codes)),
                "queries_per_request": round(captured / max(len(first), 1), 1),
                "queries_per_post": round(captured / args.batch, 2),
                "cpu_ms_per_post": round(1000 * cpu / args.posts, 3),
                "db_cpu_ms_per_post": round(1000 * db_cpu / args.posts, 3),
                "wall_ms_per_post": round(1000 * wall / args.posts, 3),
                "posts_per_cpu_s": round(args.posts / cpu, 1),
            }
            print(name, json.dumps(out[name]), flush=True)
    # Never leave `received` posts behind: a worker on this database would score them.
    # Posts first: Post.source is a protected foreign key.
    from moderation.models import Post

    for source in sources:
        Post.objects.filter(source=source).delete()
        source.delete()
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
