"""End-to-end load benchmark over HTTP: fixed ingest rates up to saturation, with a real
gunicorn web server, Celery worker, Redis, PostgreSQL and Triton serving the PUBLISHED models.

For each rate (posts/s, open loop: requests are sent on schedule whatever the answers take)
it posts rate x --seconds posts to POST /api/v1/posts, waits until they are scored and reports
posts/s scored and ingest-to-scored (Post.received_at -> Post.scored_at) p50/p95/p99. It stops
after the first rate the pipeline cannot keep up with (scored rate < 90% of the offered one),
the saturation point. With --ingest-batch N the same posts/s go to POST /api/v1/posts/batch as
requests of N posts (rate / N requests per second). Then the synchronous pre-publish check:
POST /api/v1/posts?wait_ms=50 at --sync-rate requests/s, client-side p50/p99 and the answers
(200/201 scored inline, 202 not).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mod_faults \\
    python benchmarks/e2e_load.py --rates 10,20,40,80 --seconds 10

Triton: the models in --text/--tabular (default $ARTIFACTS_DIR or var/models, {text,tabular}/current) are
published into a PRIVATE repository (--repository, default /tmp/faults-repo; `manage.py
publish_models --repository ... --no-load`) and served by a private tritonserver on
--triton-port-base .. +2. The worker is benchmarks/e2e_pipeline.py's (same flags), and so is the
private redis-server that serves as broker and cache (the environment's Redis URLs are not
used, nothing in a shared Redis is touched). Loopback only; every loop is bounded in count and
time. Never part of the test suite."""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

from e2e_pipeline import (  # noqa: E402 - benchmarks/ is on sys.path
    add_debug_flag,
    apply_debug_flag,
    cpu_by_component,
    payload,
    percentile,
    session_cpu_s,
    start_worker,
    use_private_redis,
)


def wait_for(what: str, check: Any, timeout: float, interval: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"{what}: not within {timeout:.0f}s")
        time.sleep(interval)


def publish_models(args: argparse.Namespace, env: dict[str, str]) -> None:
    args.repository.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "manage.py",
            "publish_models",
            "--text",
            str(args.text),
            "--tabular",
            str(args.tabular),
            "--repository",
            str(args.repository),
            "--no-load",
            "-v",
            "0",
        ],
        cwd=REPO,
        env=env,
        check=True,
        timeout=900,
    )


def start_web(env: dict[str, str], port: int, workers: int, threads: int, log_path: Path) -> subprocess.Popen[bytes]:
    import requests

    log = log_path.open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi:application",
            "-b",
            f"127.0.0.1:{port}",
            "-w",
            str(workers),
            "-k",
            "gthread",
            "--threads",
            str(threads),
            "--timeout",
            "30",
        ],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )

    def up() -> bool:
        if proc.poll() is not None:
            raise SystemExit(f"gunicorn exited: {log_path.read_text()[-2000:]}")
        try:
            return requests.get(f"http://127.0.0.1:{port}/api/v1/posts/none", timeout=2).status_code == 401
        except requests.RequestException:
            return False

    wait_for("gunicorn", up, 60)
    return proc


class OpenLoop:
    """Sends `count` requests at `rate`/s on schedule from a thread pool (open loop), bounded by
    `max_s` seconds; records (status, client-side ms) per request, and in `sent` the request's
    index and send time (seconds from the start) under the same position."""

    def __init__(self, send: Any, rate: float, count: int, max_s: float, threads: int = 16) -> None:
        self.send, self.rate, self.count, self.max_s, self.threads = send, rate, count, max_s, threads
        self.results: list[tuple[int, float]] = []
        self.sent: list[tuple[int, float]] = []
        self.lock = threading.Lock()
        self.started = 0.0

    def _one(self, i: int) -> None:
        t = time.perf_counter()
        try:
            status = self.send(i)
        except Exception:
            status = 0
        with self.lock:
            self.results.append((status, (time.perf_counter() - t) * 1000))
            self.sent.append((i, t - self.started))

    def run(self) -> float:
        started = self.started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=self.threads) as pool:
            for i in range(self.count):
                delay = started + i / self.rate - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                if time.perf_counter() - started > self.max_s:
                    break
                pool.submit(self._one, i)
        return time.perf_counter() - started


def analyze_without_autovacuum() -> None:
    """ANALYZE the benchmark's database when the server runs without autovacuum (this machine's
    CI configuration turns it off), and say so. Autovacuum would analyze tables
    that grow this fast within seconds; without it a database created for the run has no
    statistics at all, and the planner picks plans for empty tables: reading every post of the
    source to find 32 external ids, every entry of the received-posts index to check 32 ids
    (20-28 ms per batch at 10,000 posts, growing with the table). Run between the
    rates, outside the measured windows."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW autovacuum")
        (autovacuum,) = cursor.fetchone()
        if autovacuum == "on":
            return
        cursor.execute("ANALYZE")
    print("ANALYZE (the server has autovacuum off)", flush=True)


def model_throughput(seconds: float, batch: int, threads: int, triton_sid: int | None = None) -> dict[str, Any]:
    """The served model alone, in the same run: `threads` callers (the worker's processes) send
    batches of `batch` posts through the same client the worker uses, closed loop. With
    `triton_sid`, also Triton's CPU per post (to set beside its CPU per post end to end)."""
    from django.conf import settings

    from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES
    from scoring.serving import ScoringInput, TritonScoringClient

    batches = itertools.count()

    def next_inputs() -> list[ScoringInput]:
        # New texts every call, like the ingest run's posts: spam_pipeline caches text scores,
        # so replaying one batch would measure the cache, not the model.
        n = next(batches)
        return [
            ScoringInput(
                text=payload(n * batch + i, "model")["text"],
                preview_text="",
                link=[0.0] * len(LINK_FEATURES),
                behaviour=[0.0] * len(BEHAVIOUR_FEATURES),
            )
            for i in range(batch)
        ]

    done = [0]
    lock = threading.Lock()
    latencies: list[float] = []

    def caller() -> None:
        client = TritonScoringClient(settings.TRITON_URL, protocol="grpc", timeout_s=30)
        client.score(next_inputs())  # warm
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            inputs = next_inputs()
            t = time.perf_counter()
            client.score(inputs)
            with lock:
                done[0] += batch
                latencies.append((time.perf_counter() - t) * 1000)

    started = time.perf_counter()
    triton_before = session_cpu_s(triton_sid) if triton_sid else 0.0
    workers = [threading.Thread(target=caller) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=seconds + 120)
    elapsed = time.perf_counter() - started
    result = {
        "batch": batch,
        "callers": threads,
        "posts_per_s": round(done[0] / elapsed, 1),
        "batch_ms_p50": round(percentile(latencies, 0.5), 1),
    }
    if triton_sid:
        # Includes the callers' warm-up batches: a few of ~100 per try.
        result["triton_cpu_ms_per_post"] = round(1000 * (session_cpu_s(triton_sid) - triton_before) / done[0], 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="10,20,40,80", help="ingest rates in posts/s, ascending")
    parser.add_argument("--seconds", type=float, default=10.0, help="ingest duration per rate")
    parser.add_argument("--model-seconds", type=float, default=8.0, help="model-alone throughput run")
    parser.add_argument(
        "--model-callers", default="2,4", help="concurrent callers tried for the model-alone run (best one kept)"
    )
    parser.add_argument(
        "--no-interleave",
        dest="interleave",
        action="store_false",
        help="no model-alone window after each rate (each rate is then compared only with the model "
        "measured before and after all the rates)",
    )
    parser.add_argument(
        "--repeat-saturation",
        type=int,
        default=0,
        help="after the first saturated rate, run that rate this many times more (each with its own "
        "model window after it)",
    )
    parser.add_argument("--warmup", type=int, default=30, help="unmeasured posts sent first")
    parser.add_argument("--sync-rate", type=float, default=20.0, help="wait_ms=50 requests/s (0: skip)")
    parser.add_argument("--sync-seconds", type=float, default=10.0)
    parser.add_argument(
        "--sync-warmup",
        type=float,
        default=3.0,
        help="seconds of wait_ms=50 requests at --sync-rate before the measured phase, reported as cold_start",
    )
    parser.add_argument(
        "--only-sync", action="store_true", help="skip the model-alone run and the rates: only the wait_ms=50 phase"
    )
    parser.add_argument("--no-publish", action="store_true", help="serve --repository as already published")
    parser.add_argument(
        "--no-analyze",
        action="store_true",
        help="do not ANALYZE between the rates when the server has autovacuum off (plans for empty tables)",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=64,
        help="SCORING_BATCH_SIZE for the worker (the product's default), and the model-alone batch",
    )
    parser.add_argument("--concurrency", type=int, default=2, help="worker processes")
    parser.add_argument("--prefetch", type=int, default=4, help="worker --prefetch-multiplier")
    parser.add_argument("--web-workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--web-threads", type=int, default=4, help="gunicorn threads per worker (gthread)")
    parser.add_argument(
        "--ingest-batch",
        type=int,
        default=1,
        help="posts per ingest request: 1 = POST /api/v1/posts, N > 1 = POST /api/v1/posts/batch with N posts",
    )
    parser.add_argument("--web-port", type=int, default=8710)
    parser.add_argument("--triton-port-base", type=int, default=8610)
    # Default: what `make run` / bootstrap_models trained (settings.ARTIFACTS_DIR's default).
    artifacts = Path(os.environ.get("ARTIFACTS_DIR", REPO / "var" / "models"))
    parser.add_argument("--text", type=Path, default=artifacts / "text" / "current")
    parser.add_argument("--tabular", type=Path, default=artifacts / "tabular" / "current")
    parser.add_argument("--repository", type=Path, default=Path("/tmp/faults-repo"))
    parser.add_argument("--drain-timeout", type=float, default=120.0, help="max wait for a rate's posts to score")
    parser.add_argument("--json", type=Path, default=REPO / "benchmarks" / "results" / "e2e_load.json")
    add_debug_flag(parser)
    args = parser.parse_args()
    apply_debug_flag(args)
    rates = [float(r) for r in args.rates.split(",") if r]

    port = args.triton_port_base
    os.environ.update(
        {
            "TRITON_MODEL_REPOSITORY": str(args.repository),
            "TRITON_HTTP_PORT": str(port),
            "TRITON_GRPC_PORT": str(port + 1),
            "TRITON_METRICS_PORT": str(port + 2),
            "TRITON_URL": f"127.0.0.1:{port + 1}",
            "TRITON_PROTOCOL": "grpc",
            "TRITON_LOG_DIR": str(args.repository.parent / f"{args.repository.name}-log"),
        }
    )
    workdir = Path(tempfile.mkdtemp(prefix="e2e-load-"))
    use_private_redis(workdir)
    import django

    django.setup()
    import requests
    from django.core.management import call_command
    from django.db.models import Max, Min

    from modelops import triton_server as server_control
    from moderation.models import ALL_SCOPES, Post, PostStatus, Source
    from moderation.services.api_keys import api_key_create

    call_command("migrate", verbosity=0)
    env = dict(os.environ)
    env.update({"SCORING_BATCH_SIZE": str(args.batch_size), "PYTHONUNBUFFERED": "1"})
    if not args.no_publish:
        print(f"publishing {args.text} + {args.tabular} into {args.repository}", flush=True)
        publish_models(args, env)
    triton = server_control.ServerConfig.from_settings()
    print(f"starting Triton on {triton.grpc_url}", flush=True)
    server_control.start(triton, wait_s=300)
    procs: list[subprocess.Popen[bytes]] = []
    rows: list[dict[str, Any]] = []
    sync: dict[str, Any] = {}
    model: dict[str, Any] = {}
    tries: list[dict[str, Any]] = []
    callers: list[int] = []
    try:
        procs.append(start_worker(env, args, workdir / "worker.log"))
        procs.append(start_web(env, args.web_port, args.web_workers, args.web_threads, workdir / "web.log"))
        url = f"http://127.0.0.1:{args.web_port}/api/v1/posts"
        triton_pid = server_control.read_pid(triton)
        sessions = {"web": procs[1].pid, "worker": procs[0].pid} | ({"triton": triton_pid} if triton_pid else {})
        session_local = threading.local()

        def session(raw_key: str) -> requests.Session:
            s = getattr(session_local, "s", None)
            if s is None or s.headers.get("Authorization") != f"Api-Key {raw_key}":
                s = session_local.s = requests.Session()
                s.headers["Authorization"] = f"Api-Key {raw_key}"
            return s

        if not args.only_sync:
            # The model at its best: as many callers as the worker has processes, and more (a
            # denominator measured below the model's peak would flatter the end-to-end ratio).
            callers = sorted({args.concurrency, *(int(c) for c in args.model_callers.split(",") if c)})
            tries = [model_throughput(args.model_seconds, args.batch_size, c, triton_pid) for c in callers]
            print(f"served model alone, before the rates: {tries}", flush=True)

        # Warm-up (not measured): first requests load Python modules, connections, Triton models.
        warm = Source.objects.create(name=f"e2e warm {uuid.uuid4().hex[:8]}", slug=f"e2e-warm-{uuid.uuid4().hex[:8]}")
        _, warm_key = api_key_create(source=warm, name="bench", scopes=ALL_SCOPES)
        for i in range(args.warmup):
            session(warm_key).post(url, json=payload(i, warm.slug), timeout=30)
        wait_for(
            "warm-up scored", lambda: not Post.objects.filter(source=warm, status=PostStatus.RECEIVED).exists(), 120
        )

        def run_rate(rate: float) -> dict[str, Any]:
            if not args.no_analyze:
                analyze_without_autovacuum()
            run = uuid.uuid4().hex[:8]
            source = Source.objects.create(name=f"e2e load {run}", slug=f"e2e-load-{run}")
            _, raw_key = api_key_create(source=source, name="bench", scopes=ALL_SCOPES)
            count = int(rate * args.seconds)
            per = args.ingest_batch

            def send(i: int, run: str = run, raw_key: str = raw_key, per: int = per) -> int:
                if per == 1:
                    return session(raw_key).post(url, json=payload(i, run), timeout=30).status_code
                body = {"posts": [payload(j, run) for j in range(i * per, (i + 1) * per)]}
                response = session(raw_key).post(f"{url}/batch", json=body, timeout=30)
                if response.status_code != 207 or response.json()["created"] != per:
                    return 0 if response.status_code == 207 else response.status_code
                return 207

            requests_count = count // per
            cpu_before = cpu_by_component(sessions)
            loop = OpenLoop(send, rate / per, requests_count, max_s=args.seconds * 3)
            sent_s = loop.run()
            posts = Post.objects.filter(source=source)
            deadline = time.monotonic() + args.drain_timeout
            while posts.filter(status=PostStatus.RECEIVED).exists() and time.monotonic() < deadline:
                time.sleep(0.25)
            cpu_after = cpu_by_component(sessions)
            unscored = posts.filter(status=PostStatus.RECEIVED).count()
            done = list(posts.exclude(scored_at=None).values_list("received_at", "scored_at"))
            latencies = [(b - a).total_seconds() * 1000 for a, b in done]
            span = posts.aggregate(first=Min("received_at"), last=Max("scored_at"))
            wall = (span["last"] - span["first"]).total_seconds() if done else float("nan")
            statuses = [s for s, _ in loop.results]
            row = {
                "offered_posts_per_s": rate,
                "ingest_batch": per,
                "sent": len(loop.results) * per,
                "achieved_ingest_per_s": round(len(loop.results) * per / sent_s, 1),
                "ingest_2xx": per * sum(1 for s in statuses if 200 <= s < 300),  # posts
                "ingest_errors": per * sum(1 for s in statuses if not 200 <= s < 300),
                "ingest_ms_p50": round(percentile([ms for _, ms in loop.results], 0.5), 1),
                "ingest_ms_p99": round(percentile([ms for _, ms in loop.results], 0.99), 1),
                "scored": len(done),
                "unscored_after_timeout": unscored,
                "scored_posts_per_s": round(len(done) / wall, 1) if done and wall > 0 else 0.0,
                "to_scored_ms_p50": round(percentile(latencies, 0.5), 1),
                "to_scored_ms_p95": round(percentile(latencies, 0.95), 1),
                "to_scored_ms_p99": round(percentile(latencies, 0.99), 1),
                # CPU ms per scored post by component, send to drained (includes the drain's
                # polling queries in postgres and the load generator).
                "cpu_ms_per_post": {
                    k: round(1000 * (cpu_after[k] - cpu_before[k]) / max(len(done), 1), 2) for k in cpu_after
                },
            }
            # Saturated: the pipeline no longer keeps up (a straggler or two is not saturation;
            # those are reported in unscored_after_timeout).
            row["saturated"] = unscored > 0.01 * count or row["scored_posts_per_s"] < 0.9 * rate
            return row

        def model_window() -> float:
            """The model alone right after a rate, with the best caller count of the first tries:
            the rate is compared with the windows just before and after it, seconds apart,
            rather than only with windows a minute or more away (this machine's speed drifts by
            up to 20 % in that time, which moved the ratio by +-8 points run to run)."""
            window = model_throughput(args.model_seconds, args.batch_size, best_callers, triton_pid)
            windows.append(window)
            return float(window["posts_per_s"])

        windows: list[dict[str, Any]] = []
        if not args.only_sync:
            best_try = max(tries, key=lambda t: t["posts_per_s"])
            best_callers = int(best_try["callers"])
            model_before = float(best_try["posts_per_s"])
            schedule, repeating = list(rates), False
            while schedule:
                rate = schedule.pop(0)
                row = run_rate(rate)
                model_after = model_window() if args.interleave else model_before
                # The conservative neighbour: the faster of the two windows around the rate.
                row["model_adjacent_posts_per_s"] = max(model_before, model_after)
                row["ratio_to_adjacent_model"] = round(row["scored_posts_per_s"] / row["model_adjacent_posts_per_s"], 3)
                model_before = model_after
                rows.append(row)
                print(json.dumps(row), flush=True)
                if row["saturated"] and not repeating:
                    print(f"saturated at {rate} posts/s offered", flush=True)
                    # The saturating rate again --repeat-saturation times: several ratios in one
                    # run, each against its own neighbouring model windows.
                    schedule, repeating = [rate] * args.repeat_saturation, True

        if not args.only_sync:
            # The model alone again, after the rates: this machine's speed drifts by up to 30 %
            # within minutes, so one measurement before the rates can land in a slow spell and
            # flatter the ratio. The denominator is the best of both (the conservative one).
            tries += [model_throughput(args.model_seconds, args.batch_size, c, triton_pid) for c in callers]
            model = max(tries, key=lambda t: t["posts_per_s"]) | {"tries": tries}
            print(f"served model alone, best before and after the rates: {model['posts_per_s']}", flush=True)

        # The synchronous pre-publish check at a fixed rate (--sync-rate 0 skips it).
        if args.sync_rate > 0:
            if not args.no_analyze:
                analyze_without_autovacuum()
            run = uuid.uuid4().hex[:8]
            source = Source.objects.create(name=f"e2e sync {run}", slug=f"e2e-sync-{run}")
            _, raw_key = api_key_create(source=source, name="bench", scopes=ALL_SCOPES)

            def send_sync(i: int) -> int:
                return session(raw_key).post(f"{url}?wait_ms=50", json=payload(i, run), timeout=30).status_code

            # The first requests after start find the check's path cold in every web process
            # and thread (imports, PostgreSQL and Triton connections per thread): a deployment
            # pays that once per process, so those seconds are reported apart ("cold_start")
            # and the measured phase starts warm. The load generator's own full garbage
            # collections (~0.1 s with Django and the Triton client loaded) would land in the
            # client-side latency: its start-up objects are frozen out of them, as the web's are.
            gc.collect()
            gc.freeze()
            cold = OpenLoop(
                lambda i: send_sync(-1 - i),
                args.sync_rate,
                int(args.sync_rate * args.sync_warmup),
                args.sync_warmup * 3,
            )
            cold.run()
            cold_ms = [m for _, m in cold.results] or [0.0]
            cold_start = {
                "seconds": args.sync_warmup,
                "requests": len(cold.results),
                "ms_p50": round(percentile(cold_ms, 0.5), 1),
                "ms_max": round(max(cold_ms), 1),
                "over_50ms": sum(1 for m in cold_ms if m > 50),
                "first_10_ms": [
                    round(m, 1)
                    for (_, m), _ in sorted(zip(cold.results, cold.sent, strict=True), key=lambda r: r[1][0])
                ][:10],
            }
            loop = OpenLoop(send_sync, args.sync_rate, int(args.sync_rate * args.sync_seconds), args.sync_seconds * 3)
            cpu_before = cpu_by_component(sessions)
            loop.run()
            cpu_after = cpu_by_component(sessions)
            ms = [m for _, m in loop.results]
            answers: dict[str, int] = {}
            for status, _ in loop.results:
                answers[str(status)] = answers.get(str(status), 0) + 1
            sync = {
                "rate": args.sync_rate,
                "requests": len(loop.results),
                "ms_p50": round(percentile(ms, 0.5), 1),
                "ms_p95": round(percentile(ms, 0.95), 1),
                "ms_p99": round(percentile(ms, 0.99), 1),
                "answers": answers,  # 201: scored within the budget; 202: left to the worker
                "cold_start": cold_start,
                # Where the tail is: the slowest requests with their index and send time.
                "slowest": [
                    {"index": i, "sent_s": round(at, 3), "ms": round(m, 1), "status": st}
                    for (st, m), (i, at) in sorted(zip(loop.results, loop.sent, strict=True), key=lambda r: -r[0][1])[
                        :12
                    ]
                ],
                "cpu_ms_per_request": {
                    k: round(1000 * (cpu_after[k] - cpu_before[k]) / max(len(loop.results), 1), 2) for k in cpu_after
                },
            }
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, signal.SIGKILL)
        server_control.stop(triton)

    header = ["offered/s", "sent", "2xx", "err", "ingest p50", "scored/s", "p50 ms", "p95 ms", "p99 ms", "unscored"]
    print("\n" + "  ".join(f"{h:>10}" for h in header))
    for r in rows:
        cells = [
            r["offered_posts_per_s"],
            r["sent"],
            r["ingest_2xx"],
            r["ingest_errors"],
            r["ingest_ms_p50"],
            r["scored_posts_per_s"],
            r["to_scored_ms_p50"],
            r["to_scored_ms_p95"],
            r["to_scored_ms_p99"],
            r["unscored_after_timeout"],
        ]
        print("  ".join(f"{c:>10}" for c in cells))
    print(
        f"\nwait_ms=50 at {sync.get('rate')} req/s: p50 {sync.get('ms_p50')} ms, p95 {sync.get('ms_p95')} ms, "
        f"p99 {sync.get('ms_p99')} ms, "
        f"answers {sync.get('answers')}"
    )
    if rows:
        parts = list(rows[0]["cpu_ms_per_post"])
        print("\nCPU ms per scored post: " + "  ".join(f"{p:>14}" for p in ["offered/s", *parts, "total"]))
        for r in rows:
            cpu = r["cpu_ms_per_post"]
            cells = [r["offered_posts_per_s"], *cpu.values(), round(sum(cpu.values()), 2)]
            print(" " * 24 + "  ".join(f"{c:>14}" for c in cells))
    if sync.get("cpu_ms_per_request"):
        print(f"wait_ms=50 CPU ms per request: {sync['cpu_ms_per_request']}")
    if sync.get("cold_start"):
        print(f"wait_ms=50 cold start (not in the figures above): {sync['cold_start']}")
    best = max((r["scored_posts_per_s"] for r in rows), default=0.0)
    if model.get("posts_per_s"):
        print(
            f"served model alone: {model['posts_per_s']} posts/s; best end-to-end {best} posts/s "
            f"= {100 * best / model['posts_per_s']:.0f}% of it"
        )
        if any("ratio_to_adjacent_model" in r for r in rows):
            # Each rate against the model windows measured just before and after it.
            print("  each rate against the faster model window next to it (before or after):")
            for r in rows:
                flag = " (saturated)" if r.get("saturated") else ""
                print(
                    f"    at {r['offered_posts_per_s']}/s{flag}: {r['scored_posts_per_s']} of "
                    f"{r['model_adjacent_posts_per_s']} posts/s = {100 * r['ratio_to_adjacent_model']:.0f}%"
                )
            saturated = sorted(r["ratio_to_adjacent_model"] for r in rows if r.get("saturated"))
            if saturated:
                print(
                    f"  at saturation ({len(saturated)} reading(s)): min {100 * saturated[0]:.0f}%, "
                    f"median {100 * saturated[len(saturated) // 2]:.0f}%, max {100 * saturated[-1]:.0f}%"
                )
        alone = [t["triton_cpu_ms_per_post"] for t in model["tries"] if "triton_cpu_ms_per_post" in t]
        if alone:
            # The same per post alone and end to end: the ratio is then the CPU share below,
            # not Triton working harder inside the pipeline.
            print(f"  Triton CPU ms per post, the model alone: {min(alone)}-{max(alone)}")
        # What the ratio tends to at saturation on shared cores: Triton's share of the CPU one
        # scored post costs (less sensitive to the machine's drift than two throughputs).
        for r in rows:
            cpu = r["cpu_ms_per_post"]
            # The pipeline's CPU: the load generator is the client, not part of it.
            pipeline = sum(v for k, v in cpu.items() if k != "load generator")
            share = cpu.get("triton", 0.0) / max(pipeline, 1e-9)
            print(f"  at {r['offered_posts_per_s']}/s: the model's share of a scored post's CPU {100 * share:.0f}%")
    result = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "models": {"text": str(args.text), "tabular": str(args.tabular)},
        "cpu_count": os.cpu_count(),
        "load_average_1m": os.getloadavg()[0],
        "worker": {"concurrency": args.concurrency, "batch_size": args.batch_size, "prefetch": args.prefetch},
        "web_workers": args.web_workers,
        "web_threads": args.web_threads,
        "ingest_batch": args.ingest_batch,
        "analyze_between_rates": not args.no_analyze,
        "model_alone": model,
        "model_windows_between_rates": windows,
        "best_scored_posts_per_s": max((r["scored_posts_per_s"] for r in rows), default=0.0),
        "rates": rows,
        "sync_check": sync,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
