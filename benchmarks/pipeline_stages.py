"""Per-stage cost of spam_pipeline: perf_analyzer at concurrency 1 on every sub-model and on
the pipeline, for two code variants served side by side.

Two private Triton servers run at once on the same published artifacts: "after" with the
model.py files and configs of this source tree, "before" with those of a git ref (default
main). Measurements alternate between them model by model and round by round, so the
machine's (shared, noisy) load hits both alike. spam_pipeline runs with its text-score cache
off (perf_analyzer replays the same texts). Only one server does work at a time.

    .venv/bin/python benchmarks/pipeline_stages.py --ref main --port-base 8450
    # --pyspy SECONDS additionally records py-spy profiles of every stub of the "after" server
    # while spam_pipeline runs (written next to the results as speedscope/flamegraph files).

Writes benchmarks/results/pipeline-stages-<UTC time>.json and prints a table of p50/p99/avg
and the server-side compute per stage.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

import django  # noqa: E402

django.setup()

from benchmarks import perf_analyzer  # noqa: E402
from benchmarks.serving import (  # noqa: E402
    _cache_size_change,
    reload_with,
    sms_texts,
    spam_pipeline_data,
    text_classifier_data,
)
from modelops import triton_server  # noqa: E402
from modelops.model_repository import ALL_MODELS, TREE_MODELS, Artifacts, resolve_current  # noqa: E402

WORK = ROOT / "var" / "bench-stages"
RESULTS = ROOT / "benchmarks" / "results"
STAGES = ("tokenizer", "text_classifier", "link_model", "behaviour_model", "fusion_model", "spam_pipeline")


def stage_inputs(text_dir: Path, texts: list[str], labels: list[int]) -> dict[str, dict[str, Any]]:
    from contracts.feature_schema import FUSION_FEATURES

    pipeline = spam_pipeline_data(texts, labels)
    rows = pipeline["data"]
    computed = {"text_prob": 0.3, "preview_prob": -1.0, "link_prob": 0.2, "behaviour_prob": 0.6}
    from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES

    def fusion(row: dict[str, Any]) -> list[float]:
        out = []
        for name in FUSION_FEATURES:
            if name in computed:
                out.append(computed[name])
            elif name in LINK_FEATURES:
                out.append(row["LINK_FEATURES"][LINK_FEATURES.index(name)])
            else:
                out.append(row["BEHAVIOUR_FEATURES"][BEHAVIOUR_FEATURES.index(name)])
        return out

    return {
        "tokenizer": {"data": [{"TEXT": r["TEXT"]} for r in rows]},
        "text_classifier": text_classifier_data(text_dir, texts),
        "link_model": {"data": [{"FEATURES": r["LINK_FEATURES"]} for r in rows]},
        "behaviour_model": {"data": [{"FEATURES": r["BEHAVIOUR_FEATURES"]} for r in rows]},
        "fusion_model": {"data": [{"FEATURES": fusion(r)} for r in rows]},
        "spam_pipeline": pipeline,
    }


def overlay_ref(repository: Path, ref: str) -> None:
    """Replace config.pbtxt and every version's model.py with the files of git `ref`."""
    from modelops.model_repository import SOURCE_REPOSITORY, model_source

    def show(path: Path) -> bytes:
        rel = path.resolve().relative_to(ROOT)
        return subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:{rel}"], capture_output=True, check=True).stdout

    for model in ALL_MODELS:
        (repository / model / "config.pbtxt").write_bytes(show(SOURCE_REPOSITORY / model / "config.pbtxt"))
        code = show(model_source(model))
        for version in (repository / model).iterdir():
            if version.is_dir() and version.name.isdigit():
                (version / "model.py").write_bytes(code)
    assert set(TREE_MODELS) <= set(ALL_MODELS)


def build(artifacts: Artifacts, repository: Path, ref: str | None) -> None:
    from modelops.model_repository import publish

    shutil.rmtree(repository, ignore_errors=True)
    repository.mkdir(parents=True)
    publish(artifacts, repository=repository)
    if ref is not None:
        overlay_ref(repository, ref)


def stub_pids(server_pid: int) -> dict[int, str]:
    """pid -> model of every python backend stub of one server."""
    out: dict[int, str] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == server_pid and cmd and b"stub" in cmd[0]:
            model = cmd[1].decode().rstrip("/").split("/")[-3] if len(cmd) > 1 else "?"
            out[int(proc.name)] = model
    return out


def cpu_ms(pids: Sequence[int]) -> dict[int, float]:
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) * 1000.0 / tick
    return out


def inference_count(cfg: Any, model: str) -> int:
    import urllib.request

    text = urllib.request.urlopen(cfg.metrics_url, timeout=5).read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith("nv_inference_request_success{") and f'model="{model}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def cpu_per_request(cfg: Any, model: str, run: Any) -> tuple[Any, dict[str, float]]:
    """Run `run()` and return its result and the CPU milliseconds per `model` request spent
    by each stub (by model name, instances summed) and by tritonserver itself."""
    server = triton_server.read_pid(cfg)
    assert server is not None
    stubs = stub_pids(server)
    pids = [server, *stubs]
    before, n0 = cpu_ms(pids), inference_count(cfg, model)
    result = run()
    after, n1 = cpu_ms(pids), inference_count(cfg, model)
    requests = max(n1 - n0, 1)
    per: dict[str, float] = {}
    for pid in pids:
        name = "tritonserver" if pid == server else stubs[pid]
        per[name] = per.get(name, 0.0) + (after.get(pid, 0.0) - before.get(pid, 0.0)) / requests
    per["total"] = sum(v for k, v in per.items())
    return result, {k: round(v, 3) for k, v in per.items()}


def run_level(model: str, url: str, data: Path, tag: str, count: int, concurrency: int = 1) -> dict[str, Any]:
    cmd, rows = perf_analyzer.run(
        model=model,
        url=url,
        input_data=data,
        csv_path=WORK / f"{tag}.csv",
        concurrency=(concurrency, concurrency),
        request_count=count,
        stability_percentage=50,
        max_trials=4,
        log_path=WORK / f"{tag}.log",
    )
    return {**rows[0].as_dict(), "command": " ".join(cmd)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    from django.conf import settings

    artifacts = Path(settings.ARTIFACTS_DIR)
    parser.add_argument("--text", default=str(artifacts / "text" / "current"))
    parser.add_argument("--tabular", default=str(artifacts / "tabular" / "current"))
    parser.add_argument("--ref", default="main", help="git ref of the 'before' code")
    parser.add_argument("--port-base", type=int, default=8450, help="uses base..base+5")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--request-count", type=int, default=300)
    parser.add_argument("--texts", type=int, default=300)
    parser.add_argument("--stages", default=",".join(STAGES))
    parser.add_argument("--pyspy", type=float, default=0.0, help="seconds of py-spy per stub (after server)")
    args = parser.parse_args(argv)

    WORK.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    artifacts = Artifacts(text=resolve_current(Path(args.text)), tabular=resolve_current(Path(args.tabular)))
    text_dir = Path(artifacts.text)
    texts, labels = sms_texts(args.texts)
    files = {}
    for stage, data in stage_inputs(text_dir, texts, labels).items():
        files[stage] = WORK / f"{stage}.json"
        files[stage].write_text(json.dumps(data))

    variants = {"before": args.ref, "after": None}
    cfgs = {}
    for i, (name, ref) in enumerate(variants.items()):
        repo = WORK / f"repository-{name}"
        build(artifacts, repo, ref)
        port = args.port_base + 3 * i
        cfgs[name] = triton_server.ServerConfig(
            repository=repo, log_dir=WORK / f"log-{name}", http_port=port, grpc_port=port + 1, metrics_port=port + 2
        )
    stages = [s for s in args.stages.split(",") if s]
    results: dict[str, Any] = {"started_at": stamp, "ref": args.ref, "load_start": os.getloadavg(), "runs": []}
    started = []
    try:
        for name, cfg in cfgs.items():
            print(f"[stages] starting {name} on {cfg.grpc_url}", flush=True)
            triton_server.start(cfg, die_with_parent=True)
            started.append(cfg)
            import tritonclient.grpc as grpcclient

            client = grpcclient.InferenceServerClient(cfg.grpc_url)
            reload_with(client, "spam_pipeline", _cache_size_change(cfg, 0))
        for rnd in range(args.rounds):
            for stage in stages:
                order = list(cfgs) if rnd % 2 == 0 else list(reversed(cfgs))
                for name in order:
                    tag = f"{stage}-{name}-r{rnd}-{stamp}"
                    try:
                        row, cpu = cpu_per_request(
                            cfgs[name],
                            stage,
                            functools.partial(
                                run_level,
                                stage,
                                cfgs[name].grpc_url,
                                files[stage],
                                tag,
                                args.request_count,
                                args.concurrency,
                            ),
                        )
                    except perf_analyzer.PerfAnalyzerError as exc:
                        print(f"[stages] {tag} failed: {str(exc).splitlines()[-1]}", flush=True)
                        continue
                    row.update(variant=name, stage=stage, round=rnd, cpu_ms_per_request=cpu)
                    print(f"[stages] r{rnd} {stage} {name} CPU ms/request {cpu}", flush=True)
                    results["runs"].append(row)
                    print(
                        f"[stages] r{rnd} {stage:16s} {name:6s} p50 {row['p50_ms']:.2f} p99 {row['p99_ms']:.2f} "
                        f"infer {row['server_compute_infer_ms']:.2f} queue {row['server_queue_ms']:.2f}",
                        flush=True,
                    )
        results["identical_outputs"] = compare_outputs(cfgs, files["spam_pipeline"])
        print(f"[stages] before/after outputs: {results['identical_outputs']}", flush=True)
        if args.pyspy > 0:
            results["pyspy"] = pyspy(cfgs["after"], files["spam_pipeline"], args.pyspy, stamp)
    finally:
        for cfg in started:
            triton_server.stop(cfg)
    results["load_end"] = os.getloadavg()
    out = RESULTS / f"pipeline-stages-{stamp}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))
    print(f"[stages] wrote {out}")
    return 0


def compare_outputs(cfgs: dict[str, Any], data: Path) -> dict[str, Any]:
    """Score every row of the pipeline input on both servers, one request per row and in
    batches of 8: every output of the two variants must be equal (bit for bit)."""
    from scoring.serving import ScoringInput, TritonScoringClient

    rows = [
        ScoringInput(
            text=r["TEXT"][0],
            preview_text=r["PREVIEW_TEXT"][0],
            link=r["LINK_FEATURES"],
            behaviour=r["BEHAVIOUR_FEATURES"],
        )
        for r in json.loads(data.read_text())["data"]
    ]
    outs: dict[str, list[Any]] = {}
    for name, cfg in cfgs.items():
        client = TritonScoringClient(cfg.grpc_url, protocol="grpc", timeout_s=30)
        single = [client.score([r])[0] for r in rows]
        batched = [o for i in range(0, len(rows), 8) for o in client.score(rows[i : i + 8])]
        outs[name] = [(a, b) for a, b in zip(single, batched, strict=True)]

    def strip(o: Any) -> Any:
        return {**o.__dict__, "model_versions": {k: v for k, v in o.model_versions.items() if k != "spam_pipeline"}}

    before, after = outs["before"], outs["after"]
    diff_single = sum(strip(a[0]) != strip(b[0]) for a, b in zip(before, after, strict=True))
    diff_batched = sum(strip(a[1]) != strip(b[1]) for a, b in zip(before, after, strict=True))
    return {"rows": len(rows), "differing_single": diff_single, "differing_batched": diff_batched}


def pyspy(cfg: Any, data: Path, seconds: float, stamp: str) -> dict[str, str]:
    """py-spy record every stub while perf_analyzer drives spam_pipeline at concurrency 1."""
    pid = triton_server.read_pid(cfg)
    assert pid is not None
    spy = Path(sys.executable).parent / "py-spy"
    procs, outs = [], {}
    for stub, model in sorted(stub_pids(pid).items()):
        out = WORK / f"pyspy-{model}-{stub}-{stamp}.txt"
        procs.append(
            subprocess.Popen(
                [
                    str(spy),
                    "record",
                    "--pid",
                    str(stub),
                    "-d",
                    str(int(seconds)),
                    "-r",
                    "200",
                    "-f",
                    "raw",
                    "-o",
                    str(out),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        outs[f"{model}-{stub}"] = str(out)
    time.sleep(1)
    try:
        run_level("spam_pipeline", cfg.grpc_url, data, f"pyspy-{stamp}", 1000)
    except perf_analyzer.PerfAnalyzerError as exc:
        print(f"[stages] py-spy load failed: {exc}", flush=True)
    for p in procs:
        p.wait(timeout=seconds + 60)
    return outs


def table(results: dict[str, Any]) -> str:
    lines = [
        "| stage | variant | p50 ms | p99 ms | server compute infer ms | server queue ms | rounds |",
        "|---|---|---|---|---|---|---|",
    ]
    keys: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in results["runs"]:
        keys.setdefault((row["stage"], row["variant"]), []).append(row)
    for (stage, variant), rows in keys.items():

        def med(k: str, rows: list[dict[str, Any]] = rows) -> float:
            return statistics.median(r[k] for r in rows)

        lines.append(
            f"| {stage} | {variant} | {med('p50_ms'):.2f} | {med('p99_ms'):.2f} | "
            f"{med('server_compute_infer_ms'):.2f} | {med('server_queue_ms'):.2f} | {len(rows)} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
