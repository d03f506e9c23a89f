"""Where spam_pipeline's latency at concurrency 1 comes from: every request timed on its own,
grouped by what it carried, and the text model's forward pass alone by length.

Part 1 publishes the artifacts into a private repository, starts a private Triton and sends the
SMS test texts of benchmarks/serving.py (with their link previews and feature vectors) one
request at a time over gRPC, `--repeats` passes, text-score cache as configured (spam_pipeline
caches by token ids, so repeats after the first pass would hit it: the cache is turned off by
reloading the model without it). Each request is grouped by whether the cascade let its text
skip the transformer and whether it carried a preview; the slowest 2 % are listed with their
lengths. Triton's own statistics give the server-side share.

Part 2 times the served ONNX file in ONNX Runtime with the served session options (one
intra-op thread), random token ids of each length, `--batches` rows of that length per call:
CPU per row.

    .venv/bin/python benchmarks/pipeline_latency.py [--texts 300] [--repeats 3] [--batches 1,4,16,64]

Writes benchmarks/results/pipeline-latency-<UTC time>.json. Never part of the tests."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402

from benchmarks.serving import (  # noqa: E402
    _cache_size_change,
    build_repository,
    percentiles,
    reload_with,
    sms_texts,
    spam_pipeline_data,
)
from modelops import triton_server  # noqa: E402
from modelops.model_repository import Artifacts, resolve_current  # noqa: E402

WORK = ROOT / "var" / "bench-latency"
RESULTS = ROOT / "benchmarks" / "results"
LENGTHS = (16, 32, 64, 128)


def _inputs(row: dict[str, Any]) -> list[Any]:
    import tritonclient.grpc as grpcclient

    inputs = []
    for name in ("TEXT", "PREVIEW_TEXT"):
        tensor = grpcclient.InferInput(name, [1, 1], "BYTES")
        tensor.set_data_from_numpy(np.array([[row[name][0].encode()]], dtype=object))
        inputs.append(tensor)
    for name in ("LINK_FEATURES", "BEHAVIOUR_FEATURES"):
        values = np.array([row[name]], dtype=np.float32)
        tensor = grpcclient.InferInput(name, list(values.shape), "FP32")
        tensor.set_data_from_numpy(values)
        inputs.append(tensor)
    return inputs


def _server_ms(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float]:
    """Mean milliseconds per request of each of Triton's inference statistics between two reads."""

    def read(stats: dict[str, Any]) -> dict[str, tuple[int, int]]:
        raw = stats["model_stats"][0]["inference_stats"]
        return {k: (int(v.get("count", 0)), int(v.get("ns", 0))) for k, v in raw.items()}

    a, b = read(before), read(after)
    out = {}
    for key, (count, ns) in b.items():
        n = count - a.get(key, (0, 0))[0]
        if n:
            out[key] = (ns - a[key][1]) / n / 1e6
    return out


def pipeline_requests(args: argparse.Namespace) -> dict[str, Any]:
    import tritonclient.grpc as grpcclient

    artifacts = Artifacts(text=resolve_current(args.text), tabular=resolve_current(args.tabular))
    repository = WORK / "repository"
    build_repository(artifacts, repository)
    cfg = triton_server.ServerConfig(
        repository=repository,
        log_dir=WORK / "log",
        http_port=args.port,
        grpc_port=args.port + 1,
        metrics_port=args.port + 2,
    )
    texts, labels = sms_texts(args.texts)
    rows = spam_pipeline_data(texts, labels)["data"]
    triton_server.start(cfg, die_with_parent=True)
    try:
        client = grpcclient.InferenceServerClient(cfg.grpc_url)
        reload_with(client, "spam_pipeline", _cache_size_change(cfg, 0))
        skipped_output = [grpcclient.InferRequestedOutput("TEXT_MODEL_SKIPPED")]
        for row in rows[:30]:  # warm-up
            client.infer("spam_pipeline", _inputs(row), outputs=skipped_output)
        before = client.get_inference_statistics("spam_pipeline", as_json=True)
        timed = []
        for _ in range(args.repeats):
            for row in rows:
                inputs = _inputs(row)
                start = time.perf_counter()
                result = client.infer("spam_pipeline", inputs, outputs=skipped_output)
                ms = (time.perf_counter() - start) * 1000.0
                timed.append(
                    {
                        "ms": ms,
                        "skipped": bool(result.as_numpy("TEXT_MODEL_SKIPPED")[0][0]),
                        "text_chars": len(row["TEXT"][0]),
                        "preview_chars": len(row["PREVIEW_TEXT"][0]),
                    }
                )
        server = _server_ms(before, client.get_inference_statistics("spam_pipeline", as_json=True))
    finally:
        triton_server.stop(cfg)
    groups = {}
    for skipped in (True, False):
        for preview in (False, True):
            ms = [t["ms"] for t in timed if t["skipped"] == skipped and (t["preview_chars"] > 0) == preview]
            if ms:
                name = f"{'skipped' if skipped else 'classified'}, {'preview' if preview else 'no preview'}"
                groups[name] = {"requests": len(ms), **percentiles(ms)}
    slowest = sorted(timed, key=lambda t: t["ms"], reverse=True)[: max(1, len(timed) // 50)]
    return {
        "requests": len(timed),
        "all": percentiles([t["ms"] for t in timed]),
        "groups": groups,
        "server_ms": server,
        "slowest_2_percent": slowest,
    }


def forward_by_length(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """CPU ms per row of ONNX Runtime calls with the served session options, per length and
    rows per call (rows of one length: what the classifier's length grouping gives at best)."""
    from modelops.text.inference import make_session

    text_dir = Path(resolve_current(args.text))
    serving = json.loads((text_dir / "serving.json").read_text())
    session = make_session(text_dir / serving["model_file"], threads=1)
    names = {i.name for i in session.get_inputs()}
    rng = np.random.default_rng(0)
    out: dict[str, dict[str, float]] = {}
    for length in LENGTHS:
        for batch in (int(b) for b in args.batches.split(",")):
            ids = rng.integers(1000, 20000, size=(batch, length)).astype(np.int64)
            feeds = {k: v for k, v in {"input_ids": ids, "attention_mask": np.ones_like(ids)}.items() if k in names}
            for _ in range(3):
                session.run(None, feeds)
            calls = max(3, args.forward_calls // batch)
            start = time.process_time()
            for _ in range(calls):
                session.run(None, feeds)
            out.setdefault(str(length), {})[str(batch)] = (time.process_time() - start) / calls / batch * 1000.0
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    artifacts = Path(os.environ.get("ARTIFACTS_DIR", "var/models"))
    parser.add_argument("--text", type=Path, default=artifacts / "text" / "current")
    parser.add_argument("--tabular", type=Path, default=artifacts / "tabular" / "current")
    parser.add_argument("--texts", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--forward-calls", type=int, default=100, help="rows per forward-pass reading")
    parser.add_argument("--batches", default="1", help="rows per ONNX Runtime call, e.g. 1,4,16,64")
    parser.add_argument("--port", type=int, default=8650)
    args = parser.parse_args()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    results = {"started_at": stamp, "load_average_start": os.getloadavg()}
    results["pipeline"] = pipeline_requests(args)
    results["forward_cpu_ms_by_length"] = forward_by_length(args)
    results["load_average_end"] = os.getloadavg()
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"pipeline-latency-{stamp}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    pipeline = results["pipeline"]
    print(f"spam_pipeline at concurrency 1, {pipeline['requests']} requests: " + _row(pipeline["all"]))
    for name, group in pipeline["groups"].items():
        print(f"  {name:24s} {group['requests']:5d}  " + _row(group))
    print("  server side, ms per request: " + ", ".join(f"{k} {v:.2f}" for k, v in pipeline["server_ms"].items()))
    lengths = ", ".join(
        f"{t['ms']:.1f} ms ({t['text_chars']}+{t['preview_chars']} chars)" for t in pipeline["slowest_2_percent"]
    )
    print(f"  slowest 2 %: {lengths}")
    print("text model forward pass, CPU ms per row (tokens: rows per call -> ms)")
    for length, by_batch in results["forward_cpu_ms_by_length"].items():
        print(f"  {length:>4}: " + ", ".join(f"{b} -> {ms:.2f}" for b, ms in by_batch.items()))
    print(f"wrote {out}")
    return 0


def _row(p: dict[str, float]) -> str:
    return f"p50 {p['p50_ms']:.2f}  p90 {p['p90_ms']:.2f}  p99 {p['p99_ms']:.2f}  mean {p['avg_ms']:.2f} ms"


if __name__ == "__main__":
    raise SystemExit(main())
