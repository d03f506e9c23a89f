"""The text cascade (modelops/text/cascade.py): quality and cost with it on and off.

Quality, offline from the same numbers spam_pipeline computes (every window's transformer and
lexical probability, the familiarity reference), on each suite:
- sms_test: the SMS test split (the bootstrap evaluation suite; the bounds were fitted on the
  validation split, never on it);
- long_texts: SMS test texts in benign padding of about 512 tokens (benchmarks/long_texts.py's
  sets: ham only, spam at the head, middle, tail, and spam runs), where windows stop early;
- package_docs: out-of-domain ham (benchmarks/out_of_domain.py's package documentation).
Per suite: F1 of the text score at 0.5, the spam the policy would auto-approve and the ham it
would auto-remove at the default thresholds (0.2 / 0.9, escalate 0.9, an unfamiliar text never
auto-decided: scoring.services.policy.policy_actions), the share that skipped the transformer,
and how many texts changed decision.

Speed, through a real Triton serving the same artifacts: SMS test posts one per request,
at concurrency 1 and 4, spam_pipeline reloaded with TEXT_CASCADE off and on in alternating
rounds (its score cache off, since the texts repeat across rounds): posts/s, latency, and
Triton CPU per post (tritonserver plus every stub process, /proc).

    .venv/bin/python benchmarks/cascade.py --model /tmp/models/text/current \\
        --tabular /tmp/models/tabular/current --port-base 8470

The model dir needs cascade bounds in its serving.json (manage.py fit_text_cascade); without
them this fits them first, into that directory. Writes benchmarks/results/cascade-<UTC>.json
and prints both tables. Never part of the tests."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

import django  # noqa: E402

django.setup()

from benchmarks.pipeline_stages import cpu_ms, stub_pids  # noqa: E402
from benchmarks.serving import reload_with  # noqa: E402
from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES  # noqa: E402
from modelops import triton_server  # noqa: E402
from modelops.model_repository import Artifacts, publish, resolve_current  # noqa: E402
from modelops.text.cascade import (  # noqa: E402
    cascade_text_probs,
    fit_for_model,
    read_bounds,
    window_scores,
    write_bounds,
)
from modelops.text.data import load_sms_splits  # noqa: E402
from modelops.text.familiarity import load_familiarity  # noqa: E402
from modelops.text.inference import OnnxTextClassifier  # noqa: E402
from scoring.models import Action, DecisionPolicy  # noqa: E402
from scoring.services.policy import (  # noqa: E402
    DEFAULT_APPROVE_THRESHOLD,
    DEFAULT_ESCALATE_THRESHOLD,
    DEFAULT_REMOVE_THRESHOLD,
    policy_actions,
)
from scoring.serving import ScoringInput, TritonScoringClient  # noqa: E402

POLICY = DecisionPolicy(
    remove_threshold=DEFAULT_REMOVE_THRESHOLD,
    approve_threshold=DEFAULT_APPROVE_THRESHOLD,
    escalate_threshold=DEFAULT_ESCALATE_THRESHOLD,
)


def suites(classifier: OnnxTextClassifier, seed: int) -> dict[str, tuple[list[str], list[int]]]:
    from benchmarks.long_texts import build
    from benchmarks.out_of_domain import package_paragraphs

    test = load_sms_splits().test
    long_sets = build(list(test.texts), list(test.labels), tokens=512, count=30, seed=seed, tok=classifier)
    long_texts = [t for texts, _ in long_sets.values() for t in texts]
    long_labels = [y for texts, y in long_sets.values() for _ in texts]
    docs = package_paragraphs(150, seed)
    return {
        "sms_test": (list(test.texts), list(test.labels)),
        "long_texts": (long_texts, long_labels),
        "package_docs": (docs, [0] * len(docs)),
    }


def quality(model_dir: Path, seed: int) -> dict[str, Any]:
    classifier = OnnxTextClassifier(model_dir)
    familiarity = load_familiarity(model_dir)
    bounds = read_bounds(model_dir)
    out: dict[str, Any] = {"bounds": bounds.as_json() if bounds else None}
    for name, (texts, labels) in suites(classifier, seed).items():
        owners, transformer, lexical = window_scores(classifier, texts)
        unfamiliarity = familiarity.unfamiliarity(texts) if familiarity else np.full(len(texts), -1.0)
        y = np.asarray(labels)
        row: dict[str, Any] = {"texts": len(texts), "spam": int(y.sum()), "windows": len(owners)}
        actions, scores = {}, {}
        for mode, b in (("off", None), ("on", bounds)):
            probs, skip = cascade_text_probs(
                owners, transformer, lexical, unfamiliarity, b, weight=classifier.lexical_weight
            )
            acts = policy_actions(
                policy=POLICY, final_scores=probs, strongest_sub_scores=probs, unfamiliar=unfamiliarity >= 1
            )
            actions[mode], scores[mode] = acts, probs
            pred = probs >= 0.5
            tp = int((pred & (y == 1)).sum())
            row[mode] = {
                "f1": round(2 * tp / (pred.sum() + y.sum()), 4) if pred.sum() + y.sum() else None,
                "spam_auto_approved": int(((acts == Action.APPROVE.value) & (y == 1)).sum()),
                "ham_auto_removed": int(((acts == Action.REMOVE.value) & (y == 0)).sum()),
                "auto_approved": int((acts == Action.APPROVE.value).sum()),
                "auto_removed": int((acts == Action.REMOVE.value).sum()),
                "skipped_share": round(float(skip.mean()), 4),
                "windows_classified_share": round(float((~skip[owners]).mean()), 4),
            }
            if mode == "on" and skip.any():
                # How far a skipped text's score (its lexical probability) is from the blend.
                diff = np.abs(probs - scores["off"])[skip]
                row["max_abs_diff_skipped"] = round(float(diff.max()), 4)
                row["mean_abs_diff_skipped"] = round(float(diff.mean()), 4)
        row["decisions_changed"] = int((actions["on"] != actions["off"]).sum())
        out[name] = row
    return out


def _row(text: str) -> ScoringInput:
    return ScoringInput(
        text=text, preview_text="", link=[0.1] * len(LINK_FEATURES), behaviour=[0.2] * len(BEHAVIOUR_FEATURES)
    )


def _triton_cpu_ms(cfg: Any, run: Any) -> tuple[Any, float]:
    """run() and the CPU milliseconds tritonserver and its stub processes spent meanwhile.
    Only processes alive at both ends count: a reload's old stubs exit while the next run
    starts, and a process gone at the end has no reading to subtract."""
    server = triton_server.read_pid(cfg)
    assert server is not None
    pids = [server, *stub_pids(server)]
    before = cpu_ms(pids)
    result = run()
    after = cpu_ms(pids)
    return result, sum(after[p] - before[p] for p in after if p in before)


def speed(artifacts: Artifacts, port_base: int, posts: int, rounds: int) -> dict[str, Any]:
    import tritonclient.grpc as grpcclient

    work = Path(tempfile.mkdtemp(prefix="cascade-bench-"))
    repository = work / "repository"
    repository.mkdir()
    publish(artifacts, repository=repository)
    cfg = triton_server.ServerConfig(
        repository=repository,
        log_dir=work / "log",
        http_port=port_base,
        grpc_port=port_base + 1,
        metrics_port=port_base + 2,
    )
    triton_server.start(cfg, wait_s=300, die_with_parent=True)
    texts = list(load_sms_splits().test.texts)[:posts]
    results: dict[str, Any] = {}
    try:
        admin = grpcclient.InferenceServerClient(cfg.grpc_url)
        client = TritonScoringClient(cfg.grpc_url, protocol="grpc", timeout_s=30.0, metrics_url=cfg.metrics_url)
        client.score([_row(t) for t in texts[:8]])  # warm the sessions
        for concurrency in (1, 4):
            for r in range(rounds):
                for mode in ("off", "on") if r % 2 == 0 else ("on", "off"):
                    reload_with(
                        admin,
                        "spam_pipeline",
                        {
                            "parameters": {
                                **admin.get_model_config("spam_pipeline", as_json=True)["config"]["parameters"],
                                "TEXT_CASCADE": {"string_value": mode},
                                "TEXT_CACHE_SIZE": {"string_value": "0"},
                            }
                        },
                    )
                    client.score([_row(t) for t in texts[:8]])

                    def one(text: str) -> tuple[float, bool]:
                        started = time.perf_counter()
                        [out] = client.score([_row(text)])
                        return (time.perf_counter() - started) * 1000.0, out.text_model_skipped

                    def run(c: int = concurrency) -> tuple[float, list[tuple[float, bool]]]:
                        started = time.perf_counter()
                        with ThreadPoolExecutor(c) as pool:
                            done = list(pool.map(one, texts))
                        return time.perf_counter() - started, done

                    (wall, done), cpu_total = _triton_cpu_ms(cfg, run)
                    lat = sorted(ms for ms, _ in done)
                    entry = results.setdefault(f"c{concurrency}_{mode}", [])
                    entry.append(
                        {
                            "posts_per_s": round(len(texts) / wall, 1),
                            "p50_ms": round(statistics.median(lat), 2),
                            "p99_ms": round(lat[int(0.99 * (len(lat) - 1))], 2),
                            "triton_cpu_ms_per_post": round(cpu_total / len(texts), 3),
                            "skipped_share": round(sum(s for _, s in done) / len(done), 4),
                        }
                    )
    finally:
        triton_server.stop(cfg)
        shutil.rmtree(work, ignore_errors=True)
    summary = {}
    for key, runs in results.items():
        summary[key] = {
            field: round(statistics.median(r[field] for r in runs), 3)
            for field in ("posts_per_s", "p50_ms", "p99_ms", "triton_cpu_ms_per_post", "skipped_share")
        }
        summary[key]["rounds"] = runs
    return summary


def tables(report: dict[str, Any]) -> str:
    lines = [
        "| suite | texts | F1 off / on | spam auto-approved off / on | ham auto-removed off / on "
        "| decisions changed | skipped the transformer |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in report.get("quality", {}).items():
        if name == "bounds":
            continue
        off, on = row["off"], row["on"]
        lines.append(
            f"| {name} | {row['texts']} | {off['f1']} / {on['f1']} | {off['spam_auto_approved']} / "
            f"{on['spam_auto_approved']} | {off['ham_auto_removed']} / {on['ham_auto_removed']} | "
            f"{row['decisions_changed']} | {on['skipped_share']:.0%} |"
        )
    if report.get("speed"):
        lines += [
            "",
            "| concurrency | cascade | posts/s | p50 ms | p99 ms | Triton CPU ms/post | skipped |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for key, s in report["speed"].items():
            c, mode = key.split("_")
            lines.append(
                f"| {c[1:]} | {mode} | {s['posts_per_s']} | {s['p50_ms']} | {s['p99_ms']} | "
                f"{s['triton_cpu_ms_per_post']} | {s['skipped_share']:.0%} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, required=True, help="text model dir (with lexical and familiarity)")
    p.add_argument("--tabular", type=Path, help="tree models dir: needed for the speed part")
    p.add_argument("--port-base", type=int, default=18470, help="HTTP port; gRPC and metrics the next two")
    p.add_argument("--posts", type=int, default=300, help="SMS test posts per speed round")
    p.add_argument("--rounds", type=int, default=2, help="rounds per mode and concurrency (alternating)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--skip-quality", action="store_true", help="the speed part only")
    args = p.parse_args(argv)
    model_dir = resolve_current(args.model)
    if read_bounds(model_dir) is None:
        write_bounds(model_dir, fit_for_model(model_dir, load_sms_splits().validation.texts))
    out = ROOT / "benchmarks" / "results" / f"cascade-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"model": str(model_dir)}
    if not args.skip_quality:
        report["quality"] = quality(model_dir, args.seed)
        out.write_text(json.dumps(report, indent=2) + "\n")
        print(tables(report), flush=True)
    if args.tabular:
        report["speed"] = speed(
            Artifacts(text=model_dir, tabular=args.tabular), args.port_base, args.posts, args.rounds
        )
        out.write_text(json.dumps(report, indent=2) + "\n")
        print(tables(report))
    print(f"\nwritten: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
