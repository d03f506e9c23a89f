"""End-to-end pipeline benchmark: ingest N posts over the REST API, let a real Celery worker
score them through a real Triton, report posts/s scored and ingest-to-scored latency
(Post.received_at -> Post.scored_at), print a table and write JSON. --mode backlog ingests
first and then times the worker draining the backlog (scoring capacity; the latencies then
include the wait in the backlog and are not meaningful).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mod_pipeline \\
    python benchmarks/e2e_pipeline.py --posts 300 --batch-size 16 --concurrency 2

Triton: with --triton-url HOST:GRPC_PORT the worker uses that server (e.g. the real models of
`manage.py triton start`); otherwise a private Triton is started on --triton-port-base .. +2
(stopped at the end) serving --triton-repository (a published model repository) or, by
default, the tiny test models (modelops/tiny.py).
Ingest goes through the full Django/DRF stack (API key auth, validation, ingest service,
enqueue on commit) with django.test.Client in this process, one POST per post, as fast as
it can or at --rate posts/s. The database's posts are not deleted (each run uses its own
source). Broker and cache are a private redis-server started for the run
(benchmarks/private_redis.py), so they start empty and no shared Redis database is touched:
REDIS_URL, CACHE_URL and CELERY_BROKER_URL are set for this run. Never part of the test
suite."""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

from private_redis import start_private_redis  # noqa: E402 - benchmarks/ is on sys.path


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def start_private_triton(workdir: Path, port_base: int, repository: Path | None) -> tuple[Any, str]:
    """Serve `repository` (or the tiny test models when None) from a private Triton."""
    from modelops import triton_server as server_control

    if repository is None:
        from modelops.model_repository import publish
        from modelops.tiny import cached_tiny_artifacts

        repository = workdir / "repository"
        repository.mkdir(parents=True, exist_ok=True)
        publish(cached_tiny_artifacts(seed=0), repository=repository)
    config = server_control.ServerConfig(
        repository=repository,
        log_dir=workdir / "log",
        http_port=port_base,
        grpc_port=port_base + 1,
        metrics_port=port_base + 2,
    )
    server_control.start(config, wait_s=180)
    return config, config.grpc_url


def start_worker(
    env: dict[str, str], args: argparse.Namespace, log_path: Path, pool: str = "prefork"
) -> subprocess.Popen[bytes]:
    cmd = [
        str(Path(sys.executable).with_name("celery")),
        "-A",
        "config",
        "worker",
        f"--pool={pool}",
        f"--concurrency={args.concurrency}",
        f"--prefetch-multiplier={args.prefetch}",
        "-O",
        "fair",
        "--loglevel=WARNING",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "-n",
        f"bench-{uuid.uuid4().hex[:6]}@%h",
    ]
    log = log_path.open("wb")
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"worker exited: {log_path.read_text()[-2000:]}")
        if b"ready." in log_path.read_bytes():
            return proc
        time.sleep(0.1)
    raise SystemExit("worker did not become ready within 60 s")


def _proc_stats() -> list[tuple[str, list[str]]]:
    """(comm, fields after "pid (comm)") of every live process."""
    stats = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            head, tail = stat.read_text().rsplit(")", 1)
        except (OSError, ValueError):
            continue
        stats.append((head.split("(", 1)[-1], tail.split()))
    return stats


def _cpu_s(fields: list[str]) -> float:
    """utime + stime of the process, plus cutime + cstime: the CPU of its children that have
    exited (Celery replaces pool processes; without these their CPU would vanish from a sum
    over live processes and a later reading could come out lower than an earlier one)."""
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def session_cpu_s(sid: int) -> float:
    """User + system CPU seconds of the live processes of session `sid` (the worker and its pool
    children, or tritonserver and its python-backend stubs: each runs in its own session)."""
    # fields after "pid (comm)": state ppid pgrp session ...
    return sum(_cpu_s(fields) for _, fields in _proc_stats() if int(fields[3]) == sid)


def cpu_by_component(sessions: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far of each named session, of every process whose command name is
    postgres or redis-server (the machine's shared services: other load on them is counted
    too, so run on a quiet machine), and of this process (the load generator)."""
    stats = _proc_stats()
    out = {name: sum(_cpu_s(f) for _, f in stats if int(f[3]) == sid) for name, sid in sessions.items()}
    out["postgres"] = sum(_cpu_s(f) for comm, f in stats if comm == "postgres")
    out["redis"] = sum(_cpu_s(f) for comm, f in stats if comm.startswith("redis-server"))
    times = os.times()
    out["load generator"] = times.user + times.system
    return out


def start_py_spy(pid: int, out: Path) -> subprocess.Popen[bytes]:
    """Sample the worker and its pool processes (raw collapsed stacks) until SIGINT."""
    spy = str(Path(sys.executable).with_name("py-spy"))
    cmd = [spy, "record", "--pid", str(pid), "--subprocesses", "--format", "raw", "--rate", "200", "-o", str(out)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@functools.cache
def _sms() -> list[tuple[str, int]]:
    """(text, label) of the SMS test split: realistic lengths and a realistic spam share."""
    from modelops.text.data import load_sms_splits

    test = load_sms_splits().test
    return list(zip(test.texts, test.labels, strict=True))


_unique = itertools.count()


def payload(i: int, run: str) -> dict[str, Any]:
    """Post `i` of a run: an SMS text made unique in this process by a counter, so that
    spam_pipeline's text-score cache never answers for a repeat (a run that replays texts would
    measure the cache, and earlier phases of a benchmark would warm it for later ones)."""
    text, label = _sms()[i % len(_sms())]
    spammy = label == 1
    return {
        "external_id": f"{run}-{i}",
        "text": f"{text} ({next(_unique)})",
        "url": f"https://promo{i % 7}.example.com/win?ref={i}" if spammy else "",
        "author": {"external_id": f"{run}-u{i % 25}", "account_created_at": "2026-10-01T08:00:00Z"},
        "ip": f"198.51.100.{i % 200 + 1}",
        "journey": [
            {"step": "open_composer", "at": "2026-11-21T10:00:00Z"},
            {"step": "submit", "at": "2026-11-21T10:00:05Z"},
        ],
        "created_at": "2026-11-21T10:00:05Z",
    }


def use_private_redis(workdir: Path) -> None:
    """Broker and cache on a private redis-server, for this process and the worker and web
    processes it starts with its environment: call it before django.setup()."""
    url = start_private_redis(workdir)
    os.environ.update({"REDIS_URL": f"{url}/0", "CACHE_URL": f"{url}/0", "CELERY_BROKER_URL": f"{url}/1"})


def add_debug_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--debug",
        action="store_true",
        help="run with DEBUG=true (config.settings.local's default; every query then goes through "
        "the debug cursor wrapper); by default the processes started here get DEBUG=false",
    )


def apply_debug_flag(args: argparse.Namespace) -> None:
    """Set DEBUG for this process and, through the environment, the processes it starts."""
    os.environ["DEBUG"] = "true" if args.debug else "false"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--posts", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32, help="SCORING_BATCH_SIZE for the worker")
    parser.add_argument("--concurrency", type=int, default=2, help="worker processes")
    parser.add_argument("--prefetch", type=int, default=4, help="worker --prefetch-multiplier")
    parser.add_argument(
        "--mode",
        choices=["live", "backlog"],
        default="live",
        help="live: the worker scores while posts arrive (latency); backlog: ingest everything first, "
        "then start the worker and time the drain (scoring capacity)",
    )
    parser.add_argument(
        "--wait-ms", type=int, default=0, help="ingest with ?wait_ms=N (the synchronous pre-publish check)"
    )
    parser.add_argument("--rate", type=float, default=0.0, help="ingest posts/s (0: as fast as possible)")
    parser.add_argument("--triton-url", default="", help="use this Triton (gRPC host:port) instead of a tiny one")
    parser.add_argument(
        "--triton-repository", type=Path, default=None, help="serve this model repository (default: tiny models)"
    )
    parser.add_argument("--triton-port-base", type=int, default=8210)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--json", type=Path, default=REPO / "var" / "benchmarks" / "e2e_pipeline.json")
    parser.add_argument("--py-spy", type=Path, default=None, help="py-spy record the worker (raw stacks) to this file")
    add_debug_flag(parser)
    args = parser.parse_args()
    apply_debug_flag(args)
    workdir = Path(tempfile.mkdtemp(prefix="e2e-bench-"))
    use_private_redis(workdir)

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db.models import Max, Min
    from django.test import Client
    from django.utils import timezone

    from modelops import triton_server as server_control
    from moderation.models import ALL_SCOPES, Post, PostStatus, Source
    from moderation.services.api_keys import api_key_create
    from scoring.models import Score

    call_command("migrate", verbosity=0)

    triton_config = None
    triton_url = args.triton_url
    if not triton_url:
        triton_config, triton_url = start_private_triton(workdir, args.triton_port_base, args.triton_repository)
    env = dict(os.environ)
    env.update(
        {
            "TRITON_URL": triton_url,
            "TRITON_PROTOCOL": "grpc",
            "SCORING_BATCH_SIZE": str(args.batch_size),
            "DJANGO_SETTINGS_MODULE": os.environ["DJANGO_SETTINGS_MODULE"],
        }
    )
    settings.TRITON_URL, settings.TRITON_PROTOCOL = triton_url, "grpc"  # this process: ?wait_ms
    if triton_config is not None:
        env["TRITON_METRICS_PORT"] = str(triton_config.metrics_port)
        settings.TRITON_METRICS_PORT = triton_config.metrics_port
    worker = start_worker(env, args, workdir / "worker.log") if args.mode == "live" else None
    try:
        run = uuid.uuid4().hex[:8]
        source = Source.objects.create(name=f"bench {run}", slug=f"bench-{run}")
        _, raw_key = api_key_create(source=source, name="bench", scopes=ALL_SCOPES)
        client = Client(HTTP_AUTHORIZATION=f"Api-Key {raw_key}")
        ingest_ms: list[float] = []
        inline_decided = 0
        path = f"/api/v1/posts?wait_ms={args.wait_ms}" if args.wait_ms else "/api/v1/posts"
        t0 = time.perf_counter()
        for i in range(args.posts):
            if args.rate > 0:
                delay = t0 + i / args.rate - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
            t = time.perf_counter()
            response = client.post(path, payload(i, run), content_type="application/json")
            ingest_ms.append((time.perf_counter() - t) * 1000)
            inline_decided += int(response.status_code == 201 and args.wait_ms > 0)
            if response.status_code not in (200, 201, 202):
                raise SystemExit(f"ingest failed: {response.status_code} {response.content[:300]!r}")
        ingest_s = time.perf_counter() - t0
        drain_started = None
        if worker is None:
            worker = start_worker(env, args, workdir / "worker.log")
            drain_started = timezone.now()  # from "worker ready", not counting its start-up
        spy = start_py_spy(worker.pid, args.py_spy) if args.py_spy else None
        triton_pid = server_control.read_pid(triton_config) if triton_config is not None else None
        cpu_before = (session_cpu_s(worker.pid), session_cpu_s(triton_pid) if triton_pid else 0.0)

        posts = Post.objects.filter(source=source)
        deadline = time.monotonic() + args.timeout
        while posts.filter(status=PostStatus.RECEIVED).exists():
            if time.monotonic() > deadline:
                raise SystemExit(f"timeout: {posts.filter(status=PostStatus.RECEIVED).count()} posts unscored")
            time.sleep(0.2)
        worker_cpu_s = session_cpu_s(worker.pid) - cpu_before[0]
        triton_cpu_s = (session_cpu_s(triton_pid) - cpu_before[1]) if triton_pid else float("nan")
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=60)

        rows = list(posts.values_list("received_at", "scored_at"))
        latencies = [(scored - received).total_seconds() * 1000 for received, scored in rows]
        span = posts.aggregate(first=Min("received_at"), last=Max("scored_at"))
        wall_s = (span["last"] - (drain_started or span["first"])).total_seconds()
        scores = Score.objects.filter(post__source=source)
        duplicate = scores.count() - posts.count()
        model_ms = [s for s in scores.values_list("latency_ms", flat=True)]
        result = {
            "mode": args.mode,
            "posts": args.posts,
            "batch_size": args.batch_size,
            "concurrency": args.concurrency,
            "prefetch": args.prefetch,
            "rate": args.rate,
            "triton": triton_url if triton_config is None else str(args.triton_repository or "tiny test models"),
            "cpu_count": os.cpu_count(),
            "ingest_posts_per_s": round(args.posts / ingest_s, 1),
            "ingest_request_ms_p50": round(percentile(ingest_ms, 0.5), 1),
            "ingest_request_ms_p95": round(percentile(ingest_ms, 0.95), 1),
            "wait_ms": args.wait_ms,
            "decided_inline": inline_decided,
            "scored_posts_per_s": round(args.posts / wall_s, 1),
            "ingest_to_scored_ms_p50": round(percentile(latencies, 0.5), 1),
            "ingest_to_scored_ms_p95": round(percentile(latencies, 0.95), 1),
            "ingest_to_scored_ms_max": round(max(latencies), 1),
            "worker_processing_ms_p50": round(percentile(model_ms, 0.5), 1),
            # CPU while draining (backlog mode: the worker alone; live mode includes idle waits)
            "worker_cpu_ms_per_post": round(1000 * worker_cpu_s / args.posts, 2),
            "triton_cpu_ms_per_post": round(1000 * triton_cpu_s / args.posts, 2),
            "extra_score_rows": duplicate,
            "statuses": {s: posts.filter(status=s).count() for s in PostStatus.values if s != PostStatus.RECEIVED},
        }
    finally:
        if worker is not None:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(timeout=30)
        if triton_config is not None:
            server_control.stop(triton_config)

    width = max(len(k) for k in result)
    print(f"{'metric':<{width}}  value")
    for key, value in result.items():
        print(f"{key:<{width}}  {value}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
