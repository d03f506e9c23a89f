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

The web and the other services of the local stack are not started here. Prints a table and
writes JSON to benchmarks/results/. Never part of the tests."""

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
        paths = {m.path for m in proc.memory_maps(grouped=True)}
        libs = sorted(name for name, fragment in ML_LIBRARIES.items() if any(fragment in p for p in paths))
        rows.append({"pid": proc.pid, "rss_mb": proc.memory_info().rss / 2**20, "ml_libraries": libs})
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
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
