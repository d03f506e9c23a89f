"""Resident memory of the Celery worker and beat after a fixed small load, for one or more
versions of the code in the same sitting.

For each --revs entry ("worktree", or a git revision extracted with `git archive` into a
scratch folder that shares this checkout's .venv), in turn and --repeat times:
1. starts `celery -A config worker -c 2 -Q celery,training` and `celery -A config beat` as
   scripts/run_local.py does, on a private Redis broker (benchmarks/private_redis.py);
2. once both say they are ready, sends --messages `scoring.score_batch` messages for post ids
   that do not exist (each task runs its whole path to the database, nothing to score), waits
   until the queue is empty and the processes settle;
3. sums the resident memory (RSS) of each process tree with psutil, and lists which ML
   libraries (torch, transformers' tokenizers, scikit-learn, SciPy, pandas, XGBoost,
   ONNX Runtime) each process has mapped.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<migrated db> \\
    python benchmarks/memory.py --revs d1f101d,worktree --repeat 2

--triton also measures the Triton server (this checkout only): the tiny models of
modelops/tiny.py (or --artifacts: the trained ones) published into a scratch repository, the
server started with TRITON_STANDALONE_MODELS off and on in turn, its process tree (the server
and one python-backend stub per model instance) summed after readiness and a settle. Tiny
models stand in for the stubs' fixed cost (interpreter, numpy, tokenizers, XGBoost), which is
what the standalone models add; the text model's own memory is in both.

--stack measures the whole local stack, once per --repos checkout (this one by default; another
checkout, such as `git archive main | tar -x -C /tmp/base` with a .venv link, for the previous
code in the same sitting):
1. runs that checkout's own scripts/run_local.py with its own python, so the processes, flags
   and Triton configs are exactly what `make run` starts there: web, Celery worker and beat,
   a private Redis, Triton with its python-backend stubs. The models are --artifacts, published
   into a scratch repository first (so no run trains or shares a repository);
2. once the stack says it is ready, POSTs --posts distinct posts through the API with
   --clients threads and polls the API until every one is scored (the end-to-end throughput
   of the same run is recorded);
3. after --settle seconds, reads /proc/<pid>/smaps_rollup of every process of the stack and
   sums resident (RSS) and proportional (PSS: a page shared by n processes counts 1/n) memory
   per component: the supervisor, web, worker (with its pool), beat, redis, the Triton server
   and one row per model's stubs. RSS is the headline (what `ps` shows); PSS does not count
   the libraries and forked pages that processes share twice, so it is the honest sum.
--layout runs each checkout once per ';'-separated variant of comma-separated settings: a model
name sets its instance count in the scratch repository's config (text_classifier=1),
concurrency=N passes `-c N` to run_local.py (Celery pool processes), malloc_arena_max=N sets
MALLOC_ARENA_MAX for the whole stack. Layouts are compared by memory and throughput of the
same run. PostgreSQL (DATABASE_URL) is outside the stack and not counted.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> python benchmarks/memory.py --stack \
        --repos /tmp/base,. --artifacts /tmp/models --posts 200 --repeat 2

--layouts compares instance layouts of the two served models on one Triton server (the trained
--artifacts, standalone models off): for each ';'-separated variant of
text=<instances>x<threads>,pipeline=<instances>, both models are re-loaded with that layout,
perf_analyzer drives spam_pipeline (text-score cache off, the SMS test split, as
benchmarks/serving.py does) at each --levels concurrency, then the server's process tree is
read: throughput and memory of each layout in the same run, --repeat rounds interleaved.

    python benchmarks/memory.py --layouts "text=2x1,pipeline=2;text=2x1,pipeline=1" \
        --artifacts /tmp/models --levels 1,4,8

--gunicorn measures the production web shape: `gunicorn -c deploy/gunicorn.conf.py` (this
checkout, WEB_CONCURRENCY x WEB_THREADS from the environment), --posts posts POSTed and read
back through the API by --clients threads (no worker: scoring is not waited for), then RSS and
PSS of the master and each worker.

The other modes do not start the web. Prints a table and writes JSON to benchmarks/results/.
Never part of the tests."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from private_redis import start_private_redis  # noqa: E402 - benchmarks/ is on sys.path

# Shared-library path fragments of the ML stack, as they appear in /proc/<pid>/maps.
ML_LIBRARIES = {
    "torch": "/torch/lib/",
    "tokenizers": "/tokenizers/",
    "sklearn": "/sklearn/",
    "scipy": "/scipy/",
    "pandas": "/pandas/",
    "xgboost": "/xgboost/",
    "onnxruntime": "/onnxruntime/",
}
READY = {"worker": "ready.", "beat": "beat: Starting"}


def checkout(rev: str, scratch: Path) -> Path:
    """The code of `rev` in a scratch folder (git archive reads the repository, changes nothing)."""
    if rev == "worktree":
        return REPO
    dest = scratch / rev
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    (dest / ".venv").symlink_to(REPO / ".venv")
    return dest


def start(name: str, argv: list[str], code: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(argv, cwd=code, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def wait_ready(name: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while READY[name] not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"{name} did not start:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.2)


def tree_memory(pid: int) -> dict[str, Any]:
    root = psutil.Process(pid)
    processes = [root, *root.children(recursive=True)]
    rows = []
    for proc in processes:
        rows.append({"pid": proc.pid, "rss_mb": proc.memory_info().rss / 2**20, "ml_libraries": ml_libraries(proc)})
    return {"rss_mb": sum(r["rss_mb"] for r in rows), "processes": rows}


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def measure(code: Path, broker: str, messages: int, settle_s: float, workdir: Path) -> dict[str, Any]:
    import redis
    from celery import Celery

    env = {**os.environ, "CELERY_BROKER_URL": f"{broker}/0", "PYTHONDONTWRITEBYTECODE": "1"}
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    python = str(code / ".venv" / "bin" / "python")
    argv = {
        "worker": [python, "-m", "celery", "-A", "config", "worker", "-l", "INFO", "-c", "2", "-Q", "celery,training"],
        "beat": [python, "-m", "celery", "-A", "config", "beat", "-l", "INFO", "-s", str(workdir / "beat-schedule")],
    }
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for name, args in argv.items():
            log = workdir / f"{name}.log"
            procs[name] = start(name, args, code, env, log)
            wait_ready(name, procs[name], log)
        client = Celery(broker=f"{broker}/0")
        for i in range(messages):
            client.send_task("scoring.score_batch", args=[[10**12 + i]])
        queue = redis.Redis.from_url(f"{broker}/0")
        deadline = time.monotonic() + 300
        while queue.llen("celery") > 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(settle_s)
        return {name: tree_memory(proc.pid) for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            stop(proc)


def triton_memory(standalone: bool, artifacts_dir: str | None, settle_s: float, workdir: Path) -> dict[str, Any]:
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()  # publishing reads the text settings (max length, windows)
    from contracts.triton import served_models
    from modelops import triton_server
    from modelops.model_repository import Artifacts, publish
    from modelops.tiny import cached_tiny_artifacts

    if artifacts_dir:
        root = Path(artifacts_dir)
        artifacts = Artifacts(text=root / "text" / "current", tabular=root / "tabular" / "current")
    else:
        artifacts = cached_tiny_artifacts()
    repository = workdir / "repository"
    repository.mkdir(parents=True)
    publish(artifacts, repository=repository)
    ports = [int(p) for p in os.environ.get("MEMORY_TRITON_PORTS", "8470,8471,8472").split(",")]
    cfg = triton_server.ServerConfig(
        repository=repository,
        log_dir=workdir / "log",
        http_port=ports[0],
        grpc_port=ports[1],
        metrics_port=ports[2],
        models=served_models(standalone=standalone),
    )
    pid = triton_server.start(cfg, wait_s=300, die_with_parent=True)
    try:
        time.sleep(settle_s)
        result = tree_memory(pid)
    finally:
        triton_server.stop(cfg)
    return {"standalone": standalone, "models": list(cfg.models), **result}


# --- the whole local stack ----------------------------------------------------------------

SPAM_TEXTS = (
    "WINNER!! Claim your free prize {i} now, reply YES to 80082",
    "URGENT: your account {i} is suspended, verify your details at the link below",
    "Free entry in a weekly draw #{i}: text WIN to 87121 to receive the entry question",
    "You have been selected for a {i} GBP cash reward. Call 09061701461 before midnight",
)
HAM_TEXTS = (
    "Are we still on for lunch tomorrow? I can bring the notes from lecture {i}",
    "Thanks for yesterday, the photos from trip {i} are on the shared drive",
    "Running {i} minutes late, start without me and save me a seat",
    "Did you see the match last night? Score was unbelievable, {i} chances missed",
    "Mum says dinner is at 7, can you pick up bread on the way home",
    "The meeting moved to room {i}, same time as before",
)


def read_smaps(pid: int) -> dict[str, float]:
    """Rss and Pss in MiB from /proc/<pid>/smaps_rollup (zeros when the process is gone)."""
    out = {"rss_mb": 0.0, "pss_mb": 0.0}
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return out
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in ("Rss", "Pss"):
            out[f"{key.lower()}_mb"] = int(rest.split()[0]) / 1024
    return out


def _component(cmdline: list[str]) -> str:
    cmd = " ".join(cmdline)
    if "runserver" in cmd or "gunicorn" in cmd or "wsgi" in cmd:
        return "web"
    if "redis-server" in cmd:
        return "redis"
    if "celery" in cmd:
        return "worker" if " worker" in cmd else "beat" if " beat" in cmd else "celery"
    return "other"


def stack_processes(supervisor: int, triton_pid: int | None) -> list[tuple[str, psutil.Process]]:
    """(component, process) for every process of the stack: run_local.py's children and their
    pools, plus Triton (its own session, known by its pidfile) and its python-backend stubs, one
    component per model (the stub's first argument is <repository>/<model>/<version>/model.py)."""
    root = psutil.Process(supervisor)
    rows: list[tuple[str, psutil.Process]] = [("supervisor", root)]
    for child in root.children():
        name = _component(child.cmdline())
        rows += [(name, p) for p in (child, *child.children(recursive=True))]
    if triton_pid is not None and psutil.pid_exists(triton_pid):
        server = psutil.Process(triton_pid)
        rows.append(("triton server", server))
        for stub in server.children(recursive=True):
            args = stub.cmdline()
            model = Path(args[1]).parts[-3] if len(args) > 1 and args[1].endswith(".py") else "stub"
            rows.append((f"triton {model}", stub))
    return rows


def ml_libraries(proc: psutil.Process) -> list[str]:
    """The ML_LIBRARIES the process has mapped (none when its maps cannot be read)."""
    try:
        paths = {m.path for m in proc.memory_maps(grouped=True)}
    except psutil.Error:
        paths = set()
    return sorted(lib for lib, fragment in ML_LIBRARIES.items() if any(fragment in p for p in paths))


def components_memory(rows: list[tuple[str, psutil.Process]], *, per_process: bool = False) -> dict[str, Any]:
    """RSS and PSS (smaps) of named processes, summed per name and in all; per_process: also each
    process's own row with the ML libraries it has mapped."""
    components: dict[str, dict[str, float]] = {}
    processes = []
    for name, proc in rows:
        mem = read_smaps(proc.pid)
        if per_process:
            processes.append({"component": name, "pid": proc.pid, **mem, "ml_libraries": ml_libraries(proc)})
        row = components.setdefault(name, {"rss_mb": 0.0, "pss_mb": 0.0, "processes": 0})
        row["rss_mb"] += mem["rss_mb"]
        row["pss_mb"] += mem["pss_mb"]
        row["processes"] += 1
    return {
        "rss_mb": sum(r["rss_mb"] for r in components.values()),
        "pss_mb": sum(r["pss_mb"] for r in components.values()),
        "components": components,
        **({"processes": processes} if per_process else {}),
    }


def stack_memory(supervisor: int, triton_pid: int | None) -> dict[str, Any]:
    return components_memory(stack_processes(supervisor, triton_pid), per_process=True)


def _post_payload(i: int, tag: str) -> dict[str, Any]:
    spam = i % 3 == 0
    texts = SPAM_TEXTS if spam else HAM_TEXTS
    post: dict[str, Any] = {
        "external_id": f"memory-{tag}-{i}",
        "text": texts[i % len(texts)].format(i=i),
        "author": {"external_id": f"memory-author-{i % 40}", "account_created_at": "2026-01-01T00:00:00Z"},
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if spam and i % 2 == 0:
        post["url"] = f"http://prize-claim-{i % 7}.example.com/win"
    return post


def _http(method: str, url: str, key: str, payload: object = None) -> tuple[int, dict[str, Any]]:
    import urllib.error
    import urllib.request

    data = json.dumps(payload).encode() if payload is not None else None
    headers = {"Authorization": f"Api-Key {key}", "Content-Type": "application/json"}
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status), json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def send_posts(base: str, key: str, n: int, clients: int, tag: str, timeout_s: float = 600.0) -> dict[str, Any]:
    """POST n posts with `clients` threads, then poll until the API shows every one scored."""
    from concurrent.futures import ThreadPoolExecutor

    started = time.monotonic()
    with ThreadPoolExecutor(clients) as pool:
        codes = list(pool.map(lambda i: _http("POST", f"{base}/posts", key, _post_payload(i, tag))[0], range(n)))
    rejected = [c for c in codes if c not in (200, 201)]
    if rejected:
        raise SystemExit(f"{len(rejected)} posts rejected: {sorted(set(rejected))}")
    posted = time.monotonic()
    pending = {f"memory-{tag}-{i}" for i in range(n)}
    deadline = started + timeout_s
    while pending:
        for external_id in sorted(pending):
            code, body = _http("GET", f"{base}/posts/{external_id}", key)
            if code == 200 and body.get("status") != "received" and body.get("scores"):
                pending.discard(external_id)
        if time.monotonic() > deadline:
            raise SystemExit(f"{len(pending)} of {n} posts not scored after {timeout_s:.0f}s")
        if pending:
            time.sleep(0.5)
    done = time.monotonic()
    return {
        "posts": n,
        "clients": clients,
        "post_s": posted - started,
        "scored_s": done - started,
        "posts_per_s": n / (done - started),
    }


def apply_layout(repository: Path, layout: dict[str, int]) -> None:
    """Rewrite the instance count of the scratch repository's configs (never the checkout's)."""
    import re

    for model, count in layout.items():
        config = repository / model / "config.pbtxt"
        text, n = re.subn(
            r"instance_group \[ \{ count: \d+,", f"instance_group [ {{ count: {count},", config.read_text()
        )
        if n != 1:
            raise SystemExit(f"no instance_group in {config}")
        config.write_text(text)


def stack_run(
    code: Path, artifacts: Path, args: argparse.Namespace, layout: dict[str, int], workdir: Path, tag: str
) -> dict[str, Any]:
    python = str(code / ".venv" / "bin" / "python")
    http, grpc, metrics, web = args.stack_ports
    base_checkpoint = artifacts / "distilbert-base"
    env = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "REDIS_URL", "CACHE_URL")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.local",
        PYTHONDONTWRITEBYTECODE="1",
        ARTIFACTS_DIR=str(artifacts),
        # Only bootstrap_models' "is there a base to fine-tune" check reads it: a hub id is
        # taken as present, so no run downloads or builds a checkpoint.
        TEXT_MODEL_BASE=str(base_checkpoint) if base_checkpoint.exists() else "distilbert-base-uncased",
        TRITON_MODEL_REPOSITORY=str(workdir / "repository"),
        TRITON_LOG_DIR=str(workdir / "log"),
        TRITON_HTTP_PORT=str(http),
        TRITON_GRPC_PORT=str(grpc),
        TRITON_METRICS_PORT=str(metrics),
        TRITON_URL=f"127.0.0.1:{grpc}",
    )
    subprocess.run([python, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=code, env=env, check=True)
    subprocess.run([python, "manage.py", "bootstrap_models"], cwd=code, env=env, check=True, capture_output=True)
    instances = {k: v for k, v in layout.items() if k not in ("concurrency", "malloc_arena_max")}
    if instances:
        apply_layout(workdir / "repository", instances)
    run_args = ["-c", str(layout["concurrency"])] if "concurrency" in layout else []
    if "malloc_arena_max" in layout:
        env["MALLOC_ARENA_MAX"] = str(layout["malloc_arena_max"])
    log = workdir / "run_local.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [python, "scripts/run_local.py", "--port", str(web), *run_args],
            cwd=code,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    triton_pid = None
    try:
        deadline = time.monotonic() + 600
        while "[run] supervising" not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the stack of {code} did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)
        keys = subprocess.run(
            [python, "scripts/seed_demo.py", "--smoke-key"],
            cwd=code,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        key = next(line.split("=", 1)[1] for line in keys.splitlines() if line.startswith("SMOKE_KEY="))
        load = send_posts(f"http://127.0.0.1:{web}/api/v1", key, args.posts, args.clients, tag)
        time.sleep(args.settle)
        pid_file = workdir / "log" / "triton.pid"
        triton_pid = int(pid_file.read_text()) if pid_file.exists() else None
        memory = stack_memory(proc.pid, triton_pid)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # run_local stops its children and Triton
            try:
                proc.wait(timeout=180)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        if triton_pid is not None and psutil.pid_exists(triton_pid):
            os.killpg(triton_pid, signal.SIGKILL)
    return {"load": load, **memory}


def print_stack(results: list[dict[str, Any]]) -> None:
    names = sorted({c for r in results for c in r["components"]}, key=lambda c: (c.startswith("triton"), c))
    header = f"{'component':<26}" + "".join(f"{r['label'][-22:]:>24}" for r in results)
    print(header + "\n" + "-" * len(header))
    for name in names:
        cells = []
        for r in results:
            c = r["components"].get(name)
            cells.append(f"{c['rss_mb']:7.0f} / {c['pss_mb']:5.0f} ({c['processes']})" if c else "-")
        print(f"{name:<26}" + "".join(f"{cell:>24}" for cell in cells))
    print(f"{'total RSS / PSS MiB':<26}" + "".join(f"{r['rss_mb']:15.0f} / {r['pss_mb']:5.0f}" for r in results))
    print(f"{'posts/s end to end':<26}" + "".join(f"{r['load']['posts_per_s']:24.1f}" for r in results))


# --- instance layouts of the served models --------------------------------------------------


def triton_components(pid: int) -> dict[str, Any]:
    return components_memory(
        [(name, proc) for name, proc in stack_processes(os.getpid(), pid) if name.startswith("triton")]
    )


def _layout_changes(client: Any, text: tuple[int, int], pipeline: int) -> None:
    """Re-load text_classifier and spam_pipeline with these instance counts (and the text
    model's intra-op threads); the pipeline's text-score cache off, so perf_analyzer's replayed
    texts reach the text model."""
    from benchmarks.serving import reload_with

    for model, count, extra in (
        ("text_classifier", text[0], {"INTRA_OP_THREADS": str(text[1])}),
        ("spam_pipeline", pipeline, {"TEXT_CACHE_SIZE": "0"}),
    ):
        params = client.get_model_config(model, as_json=True)["config"].get("parameters", {})
        params = {**params, **{k: {"string_value": v} for k, v in extra.items()}}
        reload_with(client, model, {"instance_group": [{"count": count, "kind": "KIND_CPU"}], "parameters": params})


def layouts_main(args: argparse.Namespace) -> None:
    if not args.artifacts:
        raise SystemExit("--layouts needs --artifacts (an ARTIFACTS_DIR with text/ and tabular/)")
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import tritonclient.grpc as grpcclient

    from benchmarks import serving  # sets up Django
    from contracts.triton import served_models
    from modelops import triton_server
    from modelops.model_repository import Artifacts, resolve_current

    variants = []
    for variant in args.layouts.split(";"):
        items = dict(item.split("=") for item in variant.split(","))
        instances, threads = (int(x) for x in items["text"].split("x"))
        variants.append({"text": (instances, threads), "pipeline": int(items["pipeline"]), "label": variant})
    root = Path(args.artifacts).resolve()
    artifacts = Artifacts(
        text=resolve_current(root / "text" / "current"), tabular=resolve_current(root / "tabular" / "current")
    )
    scratch = Path(tempfile.mkdtemp(prefix="memory-layouts-"))
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    runs: list[dict[str, Any]] = []
    try:
        serving.WORK.mkdir(parents=True, exist_ok=True)  # perf_analyzer's CSV and logs
        texts, labels = serving.sms_texts(300)
        input_file = scratch / "spam_pipeline.json"
        input_file.write_text(json.dumps(serving.spam_pipeline_data(texts, labels)))
        serving.build_repository(artifacts, scratch / "repository")
        ports = [int(p) for p in os.environ.get("MEMORY_TRITON_PORTS", "8470,8471,8472").split(",")]
        cfg = triton_server.ServerConfig(
            repository=scratch / "repository",
            log_dir=scratch / "log",
            http_port=ports[0],
            grpc_port=ports[1],
            metrics_port=ports[2],
            models=served_models(standalone=False),
        )
        pid = triton_server.start(cfg, wait_s=300, die_with_parent=True)
        client = grpcclient.InferenceServerClient(cfg.grpc_url)
        try:
            for round_ in range(args.repeat):
                for variant in variants:
                    _layout_changes(client, variant["text"], variant["pipeline"])
                    rows = []
                    for level in (int(x) for x in args.levels.split(",")):
                        name = "layout-" + variant["label"].replace("=", "").replace(",", "-")
                        contender = serving.Contender(name, "spam_pipeline", input_file, variant["label"])
                        rows += serving.measure(contender, cfg, level, level, args.request_count, stamp)["rows"]
                    time.sleep(args.settle)
                    memory = triton_components(pid)
                    runs.append({"round": round_, **variant, "perf": rows, **memory})
                    perf = ", ".join(
                        f"c{r['concurrency']} {r['throughput']:.0f}/s p99 {r['p99_ms']:.0f} ms" for r in rows
                    )
                    print(
                        f"{variant['label']:<26} round {round_}: RSS {memory['rss_mb']:.0f} MiB, "
                        f"PSS {memory['pss_mb']:.0f} MiB; {perf}",
                        flush=True,
                    )
        finally:
            triton_server.stop(cfg)
        out = REPO / "benchmarks" / "results" / f"memory-layouts-{stamp}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "runs": runs}, indent=2))
        print(f"wrote {out}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _answers(url: str, key: str) -> bool:
    import urllib.error

    try:
        return _http("GET", url, key)[0] == 404
    except (urllib.error.URLError, ConnectionError):
        return False


def gunicorn_main(args: argparse.Namespace) -> None:
    from concurrent.futures import ThreadPoolExecutor

    port = int(args.stack_ports.split(",")[-1])
    env = {**os.environ, "WEB_BIND": f"127.0.0.1:{port}", "PYTHONDONTWRITEBYTECODE": "1"}
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    python = str(REPO / ".venv" / "bin" / "python")
    keys = subprocess.run(
        [python, "scripts/seed_demo.py", "--smoke-key"], cwd=REPO, env=env, check=True, capture_output=True, text=True
    ).stdout
    key = next(line.split("=", 1)[1] for line in keys.splitlines() if line.startswith("SMOKE_KEY="))
    gunicorn = str(REPO / ".venv" / "bin" / "gunicorn")
    with tempfile.NamedTemporaryFile(prefix="memory-gunicorn-", suffix=".log") as log:
        proc = subprocess.Popen(
            [gunicorn, "-c", "deploy/gunicorn.conf.py", "config.wsgi:application"],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            base = f"http://127.0.0.1:{port}/api/v1"
            deadline = time.monotonic() + 120
            while not _answers(f"{base}/posts/none", key):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"gunicorn did not start:\n{Path(log.name).read_text()[-3000:]}")
                time.sleep(0.5)
            tag = f"gunicorn-{int(time.time())}"

            def one(i: int) -> int:
                code = _http("POST", f"{base}/posts", key, _post_payload(i, tag))[0]
                return code if code not in (200, 201) else _http("GET", f"{base}/posts/memory-{tag}-{i}", key)[0]

            with ThreadPoolExecutor(args.clients) as pool:
                codes = list(pool.map(one, range(args.posts)))
            if any(c != 200 for c in codes):
                raise SystemExit(f"requests failed: {sorted(set(codes))}")
            time.sleep(args.settle)
            root = psutil.Process(proc.pid)
            rows = [{"role": "master", "pid": root.pid, **read_smaps(root.pid)}]
            rows += [{"role": "worker", "pid": p.pid, **read_smaps(p.pid)} for p in root.children()]
        finally:
            stop(proc)
    total = {k: sum(r[k] for r in rows) for k in ("rss_mb", "pss_mb")}
    for r in rows:
        print(f"{r['role']:<8} pid {r['pid']}: RSS {r['rss_mb']:.0f} MiB, PSS {r['pss_mb']:.0f} MiB")
    print(f"gunicorn total: RSS {total['rss_mb']:.0f} MiB, PSS {total['pss_mb']:.0f} MiB ({args.posts} posts)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--revs", default="worktree", help="comma-separated: git revisions and/or 'worktree'")
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--settle", type=float, default=3.0, help="seconds after the queue empties")
    parser.add_argument("--repeat", type=int, default=1, help="rounds, the revisions alternating")
    parser.add_argument("--triton", action="store_true", help="also Triton with the standalone models off and on")
    parser.add_argument(
        "--artifacts", default=None, help="with --triton: ARTIFACTS_DIR of trained models (default tiny)"
    )
    parser.add_argument("--no-celery", action="store_true", help="skip the worker and beat")
    parser.add_argument("--stack", action="store_true", help="the whole local stack of each --repos checkout")
    parser.add_argument("--repos", default=str(REPO), help="with --stack: comma-separated checkouts")
    parser.add_argument("--posts", type=int, default=200, help="with --stack: posts sent through the API")
    parser.add_argument("--clients", type=int, default=4, help="with --stack: client threads posting")
    parser.add_argument(
        "--layout", default="", help="with --stack: instance counts to impose, e.g. text_classifier=1,spam_pipeline=1"
    )
    parser.add_argument(
        "--stack-ports", default="8470,8471,8472,8473", help="with --stack: Triton HTTP, gRPC, metrics; web"
    )
    parser.add_argument("--gunicorn", action="store_true", help="the production web shape (see above)")
    parser.add_argument("--layouts", default="", help="instance layouts to compare on Triton (see above)")
    parser.add_argument("--levels", default="1,4,8", help="with --layouts: perf_analyzer concurrency levels")
    parser.add_argument("--request-count", type=int, default=300, help="with --layouts: requests per window")
    args = parser.parse_args()
    if args.layouts:
        layouts_main(args)
        return
    if args.gunicorn:
        gunicorn_main(args)
        return
    if args.stack:
        stack_main(args)
        return
    scratch = Path(tempfile.mkdtemp(prefix="memory-bench-"))
    try:
        broker = start_private_redis(scratch)
        codes = {} if args.no_celery else {rev: checkout(rev, scratch / "code") for rev in args.revs.split(",")}
        runs: list[dict[str, Any]] = []
        for round_ in range(args.repeat):
            if args.triton:
                for standalone in (True, False):
                    workdir = scratch / f"triton-{standalone}-{round_}"
                    workdir.mkdir()
                    row = triton_memory(standalone, args.artifacts, args.settle, workdir)
                    runs.append({"rev": "worktree", "round": round_, "triton": row})
                    print(
                        f"triton standalone={standalone} round {round_}: {row['rss_mb']:.0f} MB in "
                        f"{len(row['processes'])} processes ({', '.join(row['models'])})",
                        flush=True,
                    )
            for rev, code in codes.items():
                workdir = scratch / f"{rev}-{round_}"
                workdir.mkdir()
                result = measure(code, broker, args.messages, args.settle, workdir)
                runs.append({"rev": rev, "round": round_, **result})
                print(
                    f"{rev:>12} round {round_}: worker {result['worker']['rss_mb']:.0f} MB "
                    f"({len(result['worker']['processes'])} processes, "
                    f"ML: {sorted({lib for p in result['worker']['processes'] for lib in p['ml_libraries']})}), "
                    f"beat {result['beat']['rss_mb']:.0f} MB "
                    f"(ML: {sorted({lib for p in result['beat']['processes'] for lib in p['ml_libraries']})})",
                    flush=True,
                )
        out = REPO / "benchmarks" / "results" / f"memory-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"args": vars(args), "runs": runs}, indent=2) + "\n")
        print(f"wrote {out}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def stack_main(args: argparse.Namespace) -> None:
    if not args.artifacts:
        raise SystemExit("--stack needs --artifacts (an ARTIFACTS_DIR with text/ and tabular/)")
    args.stack_ports = [int(p) for p in args.stack_ports.split(",")]
    layouts = [
        {k: int(v) for k, v in (item.split("=") for item in variant.split(",") if item)}
        for variant in (args.layout.split(";") if args.layout else [""])
    ]
    repos = [Path(r).resolve() for r in args.repos.split(",")]
    scratch = Path(tempfile.mkdtemp(prefix="memory-stack-"))
    results: list[dict[str, Any]] = []
    try:
        for round_ in range(args.repeat):
            for repo in repos:
                for layout in layouts:
                    label = f"{repo.name}" + (
                        f" {','.join(f'{k[:5]}={v}' for k, v in layout.items())}" if layout else ""
                    )
                    workdir = scratch / f"{round_}-{len(results)}"
                    workdir.mkdir()
                    tag = f"{int(time.time())}-{round_}-{len(results)}"
                    row = stack_run(repo, Path(args.artifacts).resolve(), args, layout, workdir, tag)
                    results.append({"label": label, "repo": str(repo), "layout": layout, "round": round_, **row})
                    print(
                        f"{label} round {round_}: RSS {row['rss_mb']:.0f} MiB, PSS {row['pss_mb']:.0f} MiB, "
                        f"{row['load']['posts_per_s']:.1f} posts/s",
                        flush=True,
                    )
        print_stack(results)
        out = REPO / "benchmarks" / "results" / f"memory-stack-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "runs": results}, indent=2))
        print(f"wrote {out}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
