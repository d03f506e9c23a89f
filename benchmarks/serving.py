"""Model-serving benchmark: Triton (measured with perf_analyzer) against the naive baseline.

One run:
1. publishes the trained artifacts into a private model repository and starts Triton on private
   ports (8410-8412 by default), with the repository's own configs (dynamic batching, instances);
2. builds perf_analyzer input data from real SMS texts (the UCI SMS Spam Collection test split,
   the same texts for every contender): token ids for `text_classifier`, raw text plus link and
   behaviour vectors (synthetic contexts from the tabular generator) for `spam_pipeline`;
3. runs perf_analyzer at concurrency 1..8 (count windows) on `text_classifier` with the
   repository's config (the chosen layout) and re-loaded with the alternative layout
   (1 instance x 2 threads; --variants adds the chosen layout without dynamic batching),
   interleaved level by level so the machine's load hits both alike, then
   on `spam_pipeline` with its text-score cache OFF (perf_analyzer replays the same 300 texts,
   so a cache would answer nearly all of them: hits never count toward the throughput target);
4. measures the cache separately (--cache-duplicates): a stream of distinct SMS texts in which
   a share of posts repeat an earlier one, each request sent once, spam_pipeline with the cache
   off and on in turn (fresh instances each time), the hit rate read from text_classifier's
   inference count;
5. runs the baseline a newcomer would write: the transformers PyTorch fp32 model called per
   message in-process (tokenize, forward, softmax), on the same texts, with torch's default
   threads (the newcomer's) and with 1 thread (tuned, the honest comparison);
6. prints a table (throughput, p50/p95/p99, ratios to both baselines, latency breakdown) and
   writes everything to benchmarks/results/serving-<UTC time>.json.

Usage (see benchmarks/RESULTS.md for the exact commands and numbers):
    python benchmarks/serving.py   # the artifacts under $ARTIFACTS_DIR (default var/models)/{text,tabular}/current
    python benchmarks/serving.py --tiny --concurrency 1:2 --request-count 50   # harness check
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

import django  # noqa: E402

django.setup()

from benchmarks import perf_analyzer  # noqa: E402
from modelops import triton_server  # noqa: E402
from modelops.model_repository import Artifacts, publish, resolve_current  # noqa: E402

WORK = ROOT / "var" / "bench"
RESULTS = ROOT / "benchmarks" / "results"


# --- inputs ---------------------------------------------------------------------------------
def sms_texts(count: int) -> tuple[list[str], list[int]]:
    """The first `count` messages of the SMS test split (deterministic split, seed 42)."""
    from modelops.text.data import load_sms_splits

    test = load_sms_splits().test
    return list(test.texts[:count]), list(test.labels[:count])


def text_classifier_data(text_dir: Path, texts: Sequence[str]) -> dict[str, Any]:
    """Unpadded token ids per text, as the tokenizer model sends them (ragged batching)."""
    from tokenizers import Tokenizer

    serving = json.loads((text_dir / "serving.json").read_text())
    max_length = int(serving.get("max_length", 128))
    tok = Tokenizer.from_file(str(text_dir / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=max_length)
    data = []
    for enc in tok.encode_batch(list(texts)):
        n = len(enc.ids)
        data.append(
            {
                "input_ids": {"content": list(enc.ids), "shape": [n]},
                "attention_mask": {"content": list(enc.attention_mask), "shape": [n]},
            }
        )
    return {"data": data}


def spam_pipeline_data(texts: Sequence[str], labels: Sequence[int]) -> dict[str, Any]:
    """Text, link preview and the link/behaviour vectors of a plausible posting context."""
    from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES, vector
    from modelops.tabular.synthetic import generate

    frame = generate(list(texts), list(labels), seed=7)
    data = []
    for row in frame.to_dict("records"):
        preview_index = int(row["preview_index"])
        data.append(
            {
                "TEXT": [row["text"]],
                "PREVIEW_TEXT": [texts[preview_index] if preview_index >= 0 else ""],
                "LINK_FEATURES": vector(row, LINK_FEATURES),
                "BEHAVIOUR_FEATURES": vector(row, BEHAVIOUR_FEATURES),
            }
        )
    return {"data": data}


# --- Triton ---------------------------------------------------------------------------------
def build_repository(artifacts: Artifacts, repository: Path) -> dict[str, int]:
    shutil.rmtree(repository, ignore_errors=True)
    repository.mkdir(parents=True)
    return publish(artifacts, repository=repository)


def tiny_artifacts() -> Artifacts:
    from modelops.tiny import cached_tiny_artifacts

    return cached_tiny_artifacts()


@dataclass
class Contender:
    name: str
    model: str
    input_file: Path
    note: str


def reload_with(client: Any, model: str, change: dict[str, Any]) -> dict[str, Any]:
    """Load `model` again with parts of its config replaced (explicit model control)."""
    config = client.get_model_config(model, as_json=True)["config"]
    config.update(change)
    for key, value in list(change.items()):
        if value is None:
            config.pop(key, None)
    client.load_model(model, config=json.dumps(config))
    return config


# --- baseline -------------------------------------------------------------------------------
def find_hf_checkpoint(text_dir: Path) -> Path | None:
    """A transformers checkpoint (config.json + weights) in or under the text artifact dir."""
    for config in sorted(text_dir.rglob("config.json")):
        folder = config.parent
        if any((folder / w).exists() for w in ("model.safetensors", "pytorch_model.bin")):
            return folder
    return None


def pytorch_baseline(
    model_dir: Path, texts: Sequence[str], *, max_length: int, threads: int = 0, warmup: int = 10
) -> dict[str, Any]:
    """The naive baseline: transformers, PyTorch fp32, one message per call, in-process.
    threads=0 keeps torch's default (one per core); on a busy machine one thread is faster."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    default_threads = torch.get_num_threads()
    torch.set_num_threads(threads or default_threads)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir)).eval()

    def classify(text: str) -> float:
        with torch.no_grad():
            enc = tokenizer(text, return_tensors="pt", truncation=True, max_length=max_length)
            return float(model(**enc).logits.softmax(-1)[0, 1])

    for text in texts[:warmup]:
        classify(text)
    latencies = []
    start = time.perf_counter()
    for text in texts:
        t0 = time.perf_counter()
        classify(text)
        latencies.append((time.perf_counter() - t0) * 1000.0)
    wall = time.perf_counter() - start
    return {
        "model_dir": str(model_dir),
        "messages": len(texts),
        "requested_threads": threads,
        "torch_threads": torch.get_num_threads(),
        "throughput": len(texts) / wall,
        **percentiles(latencies),
    } | _restore_threads(default_threads)


def _restore_threads(threads: int) -> dict[str, Any]:
    import torch

    torch.set_num_threads(threads)
    return {}


def percentiles(latencies_ms: Sequence[float]) -> dict[str, float]:
    ordered = sorted(latencies_ms)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, round(p / 100.0 * (len(ordered) - 1)))]

    return {
        "p50_ms": pct(50),
        "p90_ms": pct(90),
        "p95_ms": pct(95),
        "p99_ms": pct(99),
        "avg_ms": statistics.fmean(ordered),
    }


# --- report ---------------------------------------------------------------------------------
def _baseline(results: dict[str, Any], threads: int) -> dict[str, Any] | None:
    """The baseline run with `threads` requested (0 = torch's default)."""
    return next((b for b in results.get("baselines", []) if b.get("requested_threads") == threads), None)


def _baseline_label(base: dict[str, Any]) -> str:
    if base.get("requested_threads"):
        return f"baseline: PyTorch fp32 in-process, {base['torch_threads']} thread (tuned)"
    return f"baseline: PyTorch fp32 in-process, torch default ({base['torch_threads']} threads)"


def add_ratios(results: dict[str, Any]) -> None:
    """Throughput ratio of every row to both baselines (None where a baseline was not run)."""
    default, single = _baseline(results, 0), _baseline(results, 1)

    def ratios(tput: float) -> dict[str, float | None]:
        return {
            "vs_baseline_default_threads": tput / default["throughput"] if default else None,
            "vs_baseline_1_thread": tput / single["throughput"] if single else None,
        }

    for base in results.get("baselines", []):
        base["ratios"] = ratios(base["throughput"])
    for run in results.get("runs", []):
        for row in run["rows"]:
            row["ratios"] = ratios(row["throughput"])
    summary: dict[str, Any] = {}
    for run in results.get("runs", []):
        if not run["rows"]:
            continue
        best = max(run["rows"], key=lambda r: r["throughput"])
        c1 = next((r for r in run["rows"] if r["concurrency"] == 1), None)
        summary[run["name"]] = {
            "best_throughput": best["throughput"],
            "best_concurrency": best["concurrency"],
            "best_ratios": best["ratios"],
            "c1_p50_ms": c1["p50_ms"] if c1 else None,
            "c1_p99_ms": c1["p99_ms"] if c1 else None,
        }
    results["summary"] = summary


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def table(results: dict[str, Any]) -> str:
    add_ratios(results)
    lines = [
        "| contender | conc | infer/s | x base (default thr) | x base (1 thr) | p50 ms | p95 ms | p99 ms "
        "| send | net+srv | queue | in | infer | out | recv |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for base in results.get("baselines", []):
        r = base["ratios"]
        lines.append(
            f"| {_baseline_label(base)} | 1 | {base['throughput']:.1f} "
            f"| {_fmt(r['vs_baseline_default_threads'])} | {_fmt(r['vs_baseline_1_thread'])} "
            f"| {base['p50_ms']:.1f} | {base['p95_ms']:.1f} | {base['p99_ms']:.1f} | | | | | | | |"
        )
    for run in results["runs"]:
        for level, error in run.get("errors", {}).items():
            lines.append(f"| {run['name']} | {level} | unstable: {error[:60]} | | | | | | | | | | | | |")
        for row in run["rows"]:
            r = row["ratios"]
            lines.append(
                f"| {run['name']} | {row['concurrency']} | {row['throughput']:.1f} "
                f"| {_fmt(r['vs_baseline_default_threads'])} | {_fmt(r['vs_baseline_1_thread'])} "
                f"| {row['p50_ms']:.1f} | {row['p95_ms']:.1f} | {row['p99_ms']:.1f} "
                f"| {row['client_send_ms']:.2f} | {row['network_server_ms']:.2f} | {row['server_queue_ms']:.2f} "
                f"| {row['server_compute_input_ms']:.2f} | {row['server_compute_infer_ms']:.2f} "
                f"| {row['server_compute_output_ms']:.2f} | {row['client_recv_ms']:.2f} |"
            )
    cache = results.get("cache")
    if cache:
        lines += [
            "",
            f"Text-score cache (spam_pipeline, {cache['requests']} requests, {cache['repeat_share']:.0%} repeat an "
            f"earlier post, each sent once; {cache['instances']} spam_pipeline instances, one cache each):",
            "",
            "| cache | conc | posts/s | p50 ms | p95 ms | p99 ms | classifier hit rate |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for row in cache["rows"]:
            lines.append(
                f"| {'on' if row['cache_size'] else 'off'} ({row['cache_size']}) | {row['concurrency']} "
                f"| {row['throughput']:.1f} | {row['p50_ms']:.1f} | {row['p95_ms']:.1f} | {row['p99_ms']:.1f} "
                f"| {row['hit_rate']:.1%} |"
            )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    from django.conf import settings

    artifacts = Path(settings.ARTIFACTS_DIR)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--text", type=Path, default=artifacts / "text" / "current", help="text artifact dir")
    p.add_argument("--tabular", type=Path, default=artifacts / "tabular" / "current", help="tabular artifact dir")
    p.add_argument("--tiny", action="store_true", help="tiny random models (checks the harness, not speed)")
    p.add_argument("--baseline-model", type=Path, default=None, help="transformers checkpoint for the baseline")
    p.add_argument("--skip-baseline", action="store_true")
    p.add_argument("--baseline-only", action="store_true", help="measure only the PyTorch baseline")
    p.add_argument(
        "--baseline-threads", default="0,1", help="torch thread counts for the baseline (0 = torch's default)"
    )
    p.add_argument("--models", nargs="+", default=["text_classifier", "spam_pipeline"])
    p.add_argument(
        "--variants", action="store_true", help="also the chosen text_classifier layout without dynamic batching"
    )
    p.add_argument("--skip-alternative", action="store_true", help="skip text_classifier's 1 x 2 threads layout")
    p.add_argument(
        "--fusion-variant",
        action="store_true",
        help="also text_classifier with ONNX Runtime's default graph fusions (DISABLED_OPTIMIZERS empty)",
    )
    p.add_argument(
        "--cache-duplicates", type=float, default=0.3, help="share of cache-run posts repeating one (0 = skip)"
    )
    p.add_argument("--cache-requests", type=int, default=1500, help="posts in the cache run's stream")
    p.add_argument("--cache-concurrency", default="1,4", help="client threads for the cache run")
    p.add_argument("--cache-size", type=int, default=8192, help="TEXT_CACHE_SIZE for the cache-on run")
    p.add_argument("--texts", type=int, default=300, help="SMS messages used by every contender")
    p.add_argument("--concurrency", default="1:8")
    p.add_argument("--request-count", type=int, default=300, help="requests per count window")
    p.add_argument("--stability", type=int, default=25, help="perf_analyzer --stability-percentage")
    p.add_argument("--port", type=int, default=8410, help="Triton HTTP port; gRPC +1, metrics +2")
    p.add_argument("--out", type=Path, default=None)
    return p.parse_args(argv)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # stop Triton on `kill` too (see the finally below)
    lo, hi = (int(x) for x in args.concurrency.split(":"))
    WORK.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())

    if args.tiny:
        artifacts = tiny_artifacts()
    else:
        artifacts = Artifacts(text=resolve_current(args.text), tabular=resolve_current(args.tabular))
    text_dir = Path(artifacts.text) if artifacts.text else None
    assert text_dir is not None
    print(f"[bench] artifacts: text={artifacts.text} tabular={artifacts.tabular}", flush=True)

    texts, labels = sms_texts(args.texts)
    print(f"[bench] {len(texts)} SMS texts, mean {statistics.fmean(len(t) for t in texts):.0f} chars", flush=True)
    inputs = {
        "text_classifier": WORK / "text_classifier.json",
        "spam_pipeline": WORK / "spam_pipeline.json",
    }
    inputs["text_classifier"].write_text(json.dumps(text_classifier_data(text_dir, texts)))
    inputs["spam_pipeline"].write_text(json.dumps(spam_pipeline_data(texts, labels)))

    repository = WORK / "repository"
    versions = build_repository(artifacts, repository)
    cfg = triton_server.ServerConfig(
        repository=repository,
        log_dir=WORK / "log",
        http_port=args.port,
        grpc_port=args.port + 1,
        metrics_port=args.port + 2,
    )
    results: dict[str, Any] = {
        "started_at": stamp,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "perf_analyzer": perf_analyzer.version(),
        "artifacts": {"text": str(artifacts.text), "tabular": str(artifacts.tabular), "tiny": args.tiny},
        "versions": versions,
        "texts": {"count": len(texts), "source": "UCI SMS Spam Collection, test split (seed 42)"},
        "runs": [],
    }
    results["load_average_start"] = os.getloadavg()
    if not args.baseline_only:
        run_triton(args, cfg, inputs, results, (lo, hi), stamp)

    if not args.skip_baseline:
        model_dir = args.baseline_model or find_hf_checkpoint(text_dir)
        if model_dir is None:
            print("[bench] no transformers checkpoint found for the baseline: pass --baseline-model", flush=True)
        else:
            max_length = int(json.loads((text_dir / "serving.json").read_text()).get("max_length", 128))
            results["baselines"] = []
            for threads in (int(t) for t in args.baseline_threads.split(",")):
                print(f"[bench] baseline: PyTorch fp32 per message, threads={threads or 'default'}", flush=True)
                results["baselines"].append(pytorch_baseline(model_dir, texts, max_length=max_length, threads=threads))
    results["load_average_end"] = os.getloadavg()

    add_ratios(results)
    out = args.out or RESULTS / f"serving-{stamp}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print()
    print(table(results))
    print(f"\n[bench] wrote {out}")
    return 0


def run_triton(
    args: argparse.Namespace,
    cfg: Any,
    inputs: dict[str, Path],
    results: dict[str, Any],
    levels: tuple[int, int],
    stamp: str,
) -> None:
    lo, hi = levels
    print(f"[bench] starting Triton on {cfg.grpc_url} (repository {cfg.repository})", flush=True)
    triton_server.start(cfg)
    try:
        for model in args.models:
            if model == "spam_pipeline":
                # The cache would answer the replayed texts: measure the models, not the cache.
                with reloaded(cfg, "spam_pipeline", _cache_size_change(cfg, 0)):
                    contender = Contender(model, model, inputs[model], "repository config, TEXT_CACHE_SIZE 0")
                    results["runs"].append(measure(contender, cfg, lo, hi, args.request_count, stamp, args.stability))
                continue
            if model == "text_classifier":
                results["runs"].extend(
                    text_classifier_settings(
                        cfg,
                        inputs["text_classifier"],
                        lo,
                        hi,
                        args.request_count,
                        stamp,
                        args.stability,
                        alternative=not args.skip_alternative,
                        no_batching=args.variants,
                        fusions=args.fusion_variant,
                    )
                )
                continue
            contender = Contender(model, model, inputs[model], "repository config")
            results["runs"].append(measure(contender, cfg, lo, hi, args.request_count, stamp, args.stability))
        if args.cache_duplicates > 0:
            results["cache"] = cache_effect(cfg, args, results)
    finally:
        triton_server.stop(cfg)


def measure(
    contender: Contender, cfg: Any, lo: int, hi: int, request_count: int, stamp: str, stability: int = 20
) -> dict[str, Any]:
    """perf_analyzer at each concurrency level in turn. On a shared machine a window may not
    stabilise: a level is retried once with twice the requests per window and a looser
    criterion, and a level that still fails is recorded as such without losing the others."""
    rows: list[dict[str, Any]] = []
    commands: list[str] = []
    errors: dict[int, str] = {}
    for level in range(lo, hi + 1):
        attempts = [(request_count, stability), (request_count * 2, min(100, stability + 20))]
        for attempt, (count, stab) in enumerate(attempts, start=1):
            print(f"[bench] {contender.name} concurrency {level} (attempt {attempt}, stability {stab}%)", flush=True)
            tag = f"{contender.name}-c{level}-{stamp}-{attempt}"
            try:
                cmd, found = perf_analyzer.run(
                    model=contender.model,
                    url=cfg.grpc_url,
                    input_data=contender.input_file,
                    csv_path=WORK / f"{tag}.csv",
                    concurrency=(level, level),
                    request_count=count,
                    stability_percentage=stab,
                    log_path=WORK / f"{tag}.log",
                )
            except perf_analyzer.PerfAnalyzerError as exc:
                errors[level] = str(exc).splitlines()[-1]
                continue
            match = [r for r in found if r.concurrency == level]
            if not match:
                errors[level] = "no stable measurement"
                continue
            errors.pop(level, None)
            rows.append({**match[0].as_dict(), "request_count": count, "stability_percentage": stab})
            commands.append(" ".join(cmd))
            break
        if level in errors:
            print(f"[bench] {contender.name} concurrency {level} failed: {errors[level]}", flush=True)
    return {
        "name": contender.name,
        "model": contender.model,
        "note": contender.note,
        "commands": commands,
        "rows": rows,
        "errors": {str(k): v for k, v in errors.items()},
    }


def _config(cfg: Any, model: str) -> dict[str, Any]:
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(cfg.grpc_url)
    config: dict[str, Any] = client.get_model_config(model, as_json=True)["config"]
    return config


def _cache_size_change(cfg: Any, size: int) -> dict[str, Any]:
    params = _config(cfg, "spam_pipeline").get("parameters", {})
    return {"parameters": {**params, "TEXT_CACHE_SIZE": {"string_value": str(size)}}}


@contextmanager
def reloaded(cfg: Any, model: str, change: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """`model` re-loaded with `change` applied to its config, restored afterwards."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(cfg.grpc_url)
    original = client.get_model_config(model, as_json=True)["config"]
    try:
        yield reload_with(client, model, change)
    finally:
        client.load_model(model, config=json.dumps(original))


def text_classifier_settings(
    cfg: Any,
    input_file: Path,
    lo: int,
    hi: int,
    request_count: int,
    stamp: str,
    stability: int,
    *,
    alternative: bool = True,
    no_batching: bool = False,
    fusions: bool = False,
) -> list[dict[str, Any]]:
    """text_classifier with the repository's config and under other serving settings, to show
    what the chosen ones buy. Interleaved: at each concurrency level every setting is measured
    in turn (re-loaded each time), so load from other processes hits them alike."""
    original = _config(cfg, "text_classifier")
    params = original.get("parameters", {})
    threads = int(params.get("INTRA_OP_THREADS", {}).get("string_value", "1"))
    count = int(original["instance_group"][0].get("count", 1))
    settings: list[tuple[str, dict[str, Any] | None]] = [("text_classifier", None)]
    if alternative:
        # The other way to use 2 cores: swap instances and threads (2 x 1 <-> 1 x 2).
        alt_count, alt_threads = (1, 2) if count > 1 else (2, 1)
        settings.append(
            (
                f"text_classifier:{alt_count}-instance(s)-{alt_threads}-thread(s)",
                {
                    "instance_group": [{"count": alt_count, "kind": "KIND_CPU"}],
                    "parameters": {**params, "INTRA_OP_THREADS": {"string_value": str(alt_threads)}},
                },
            )
        )
    if no_batching:
        settings.append((f"text_classifier:{count}x{threads}-no-dynamic-batching", {"dynamic_batching": None}))
    if fusions and params.get("DISABLED_OPTIMIZERS", {}).get("string_value"):
        # ONNX Runtime's default graph fusions (SkipLayerNormalization included): what leaving
        # them off (TEXT_DISABLED_OPTIMIZERS) buys, same run.
        settings.append(
            (
                "text_classifier:ort-default-fusions",
                {"parameters": {**params, "DISABLED_OPTIMIZERS": {"string_value": ""}}},
            )
        )
    runs: dict[str, dict[str, Any]] = {}
    for level in range(lo, hi + 1):
        for name, change in settings:
            contender = Contender(
                name, "text_classifier", input_file, json.dumps(change) if change else "repository config"
            )
            if change is None:
                one = measure(contender, cfg, level, level, request_count, stamp, stability)
            else:
                with reloaded(cfg, "text_classifier", change):
                    one = measure(contender, cfg, level, level, request_count, stamp, stability)
            run = runs.setdefault(name, {**one, "rows": [], "commands": [], "errors": {}})
            run["rows"] += one["rows"]
            run["commands"] += one["commands"]
            run["errors"].update(one["errors"])
    return list(runs.values())


# --- the text-score cache -------------------------------------------------------------------
def duplicate_stream(count: int, repeat_share: float, *, seed: int = 11) -> tuple[list[str], int]:
    """`count` posts: distinct SMS texts (all splits of the deduplicated collection) in order,
    where each post repeats an earlier one with probability `repeat_share`, recent ones more
    often (a campaign is sent in bursts). Returns (texts, number of repeats)."""
    import random

    from modelops.text.data import load_sms_splits

    splits = load_sms_splits()
    fresh = iter(list(splits.train.texts) + list(splits.validation.texts) + list(splits.test.texts))
    rng = random.Random(seed)
    stream: list[str] = []
    repeats = 0
    for _ in range(count):
        if stream and rng.random() < repeat_share:
            # Most repeats come from the last 200 posts, some from anywhere earlier.
            window = stream[-200:] if rng.random() < 0.8 else stream
            stream.append(rng.choice(window))
            repeats += 1
        else:
            stream.append(next(fresh))
    return stream, repeats


def _classified(client: Any) -> int:
    return sum(int(s.get("inference_count", 0)) for s in client.statistics("text_classifier"))


def _send_stream(cfg: Any, texts: Sequence[str], concurrency: int) -> tuple[float, list[float]]:
    """Each text once as one spam_pipeline request, from `concurrency` client threads in
    stream order; returns (wall seconds, latencies in ms)."""
    import threading

    from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES
    from scoring.serving import ScoringInput, TritonScoringClient

    link, behaviour = [0.0] * len(LINK_FEATURES), [0.0] * len(BEHAVIOUR_FEATURES)
    latencies: list[float] = []
    position = iter(range(len(texts)))
    lock = threading.Lock()

    def worker() -> None:
        client = TritonScoringClient(cfg.grpc_url, protocol="grpc", timeout_s=30)
        while True:
            with lock:
                i = next(position, None)
            if i is None:
                return
            t0 = time.perf_counter()
            client.score([ScoringInput(text=texts[i], preview_text="", link=link, behaviour=behaviour)])
            elapsed = (time.perf_counter() - t0) * 1000.0
            with lock:
                latencies.append(elapsed)

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start, latencies


def cache_effect(cfg: Any, args: argparse.Namespace, results: dict[str, Any]) -> dict[str, Any]:
    """spam_pipeline on a stream with repeats, cache off then on (each on fresh instances, so
    the cache starts empty), at each client concurrency. Hits are measured, not assumed."""
    from scoring.serving import TritonScoringClient

    texts, repeats = duplicate_stream(args.cache_requests, args.cache_duplicates)
    stats = TritonScoringClient(cfg.grpc_url, protocol="grpc", timeout_s=30)
    warm, _ = duplicate_stream(50, 0.0, seed=99)
    rows = []
    for concurrency in (int(c) for c in args.cache_concurrency.split(",")):
        for size in (0, args.cache_size):
            with reloaded(cfg, "spam_pipeline", _cache_size_change(cfg, size)):
                print(f"[bench] cache {size} concurrency {concurrency}: {len(texts)} posts", flush=True)
                # Warm-up (stub start-up, first ORT runs) on texts that are not in the stream.
                _send_stream(cfg, [f"{t} (warm-up)" for t in warm[:20]], 1)
                before = _classified(stats)
                wall, latencies = _send_stream(cfg, texts, concurrency)
                classified = _classified(stats) - before
            rows.append(
                {
                    "cache_size": size,
                    "concurrency": concurrency,
                    "throughput": len(texts) / wall,
                    "classified": classified,
                    "hit_rate": 1.0 - classified / len(texts),
                    **percentiles(latencies),
                }
            )
    instances = int(_config(cfg, "spam_pipeline")["instance_group"][0].get("count", 1))
    return {
        "requests": len(texts),
        "repeats": repeats,
        "repeat_share": repeats / len(texts),
        "instances": instances,
        "rows": rows,
        "note": "each post sent once (no replay); not part of the throughput-target comparison",
    }


if __name__ == "__main__":
    raise SystemExit(main())
