"""Locate and prepare perf_analyzer (shipped in the tritonclient 2.51 wheel) for spam_pipeline.

The wheel's binary needs libb64.so.0d and libcudart.so.12, which it does not ship; the copies
bundled in nvidia_pytriton.libs work (CUDA is never used). `prepare()` symlinks them into a
private lib dir and returns the binary and the environment to run it with.

    python -m modelops.perf_analyzer --url 127.0.0.1:8011 --concurrency 1 8
    python -m modelops.perf_analyzer --url 127.0.0.1:8011 --loop      # pure-Python loop instead

The one place that finds and prepares the binary: benchmarks/perf_analyzer.py runs it over a
concurrency range and parses its CSV report with these.

`input_data()` writes the --input-data JSON: real-looking SMS texts (BYTES inputs need
explicit data) and feature vectors with the schema's lengths.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES

SAMPLE_TEXTS = (
    "Ok lar... Joking wif u oni...",
    "FREE entry in 2 a wkly comp to win FA Cup final tkts 21st May 2005. Text FA to 87121 to receive entry",
    "Nah I don't think he goes to usf, he lives around here though",
    "WINNER!! As a valued network customer you have been selected to receive a £900 prize reward! "
    "To claim call 09061701461. Claim code KL341. Valid 12 hours only.",
    "I'm gonna be home soon and i don't want to talk about this stuff anymore tonight, k? I've cried enough today.",
    "Had your mobile 11 months or more? U R entitled to Update to the latest colour mobiles with camera for Free!",
    "See you at the station at 6",
    "URGENT! You have won a 1 week FREE membership in our £100,000 Prize Jackpot! Txt the word: CLAIM to No: 81010",
)


class PerfAnalyzerError(RuntimeError):
    pass


# The private folder the missing libraries are linked into (under the repository's var/).
LIB_DIR = Path(__file__).resolve().parent.parent / "var" / "perf_analyzer" / "lib"
NEEDED = {"libb64.so.0d": "libb64-*.so.0d", "libcudart.so.12": "libcudart-*.so.12*"}


def binary() -> Path:
    """The perf_analyzer of this environment's tritonclient wheel."""
    found = Path(sysconfig.get_path("scripts")) / "perf_analyzer"
    if not found.exists():
        which = shutil.which("perf_analyzer")
        if which is None:
            raise PerfAnalyzerError("perf_analyzer not found: install tritonclient==2.51.0 (requirements.txt)")
        found = Path(which)
    return found


def _bundled_libs() -> Path:
    import pytriton

    libs = Path(pytriton.__file__).resolve().parent.parent / "nvidia_pytriton.libs"
    if not libs.is_dir():
        raise PerfAnalyzerError(f"{libs} missing: install nvidia-pytriton==0.7.0 (requirements.txt)")
    return libs


def environment(lib_dir: Path | None = None) -> dict[str, str]:
    """Environment in which perf_analyzer finds its libraries (links created once)."""
    target = lib_dir or LIB_DIR
    target.mkdir(parents=True, exist_ok=True)
    libs = _bundled_libs()
    for name, pattern in NEEDED.items():
        link = target / name
        if link.exists():
            continue
        candidates = sorted(libs.glob(pattern))
        if not candidates:
            raise PerfAnalyzerError(f"no {pattern} in {libs}")
        link.unlink(missing_ok=True)
        link.symlink_to(candidates[0])
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(target), env.get("LD_LIBRARY_PATH", "")) if p)
    return env


def prepare(lib_dir: Path | None = None) -> tuple[Path, dict[str, str]]:
    """Return (perf_analyzer path, env) with the missing shared libraries linked in."""
    return binary(), environment(lib_dir)


def version() -> str:
    out = subprocess.run([str(binary()), "--version"], env=environment(), capture_output=True, text=True, check=False)
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else "unknown"


def input_data(path: Path, *, rows: int = 64, seed: int = 0) -> Path:
    rng = random.Random(seed)
    data = []
    for i in range(rows):
        data.append(
            {
                "TEXT": [SAMPLE_TEXTS[i % len(SAMPLE_TEXTS)]],
                "PREVIEW_TEXT": [""],
                "LINK_FEATURES": {"content": [rng.random() for _ in LINK_FEATURES], "shape": [len(LINK_FEATURES)]},
                "BEHAVIOUR_FEATURES": {
                    "content": [rng.random() for _ in BEHAVIOUR_FEATURES],
                    "shape": [len(BEHAVIOUR_FEATURES)],
                },
            }
        )
    path.write_text(json.dumps({"data": data}))
    return path


def command(
    url: str, concurrency: int, data: Path, *, protocol: str = "grpc", count: int = 200, stability: int = 25
) -> list[str]:
    return [
        str(binary()),
        "-m",
        "spam_pipeline",
        "-u",
        url,
        "-i",
        protocol,
        "-b",
        "1",
        "--input-data",
        str(data),
        "--concurrency-range",
        f"{concurrency}:{concurrency}",
        "--measurement-mode",
        "count_windows",
        "--measurement-request-count",
        str(count),
        "--percentile",
        "50",
        # 2 shared cores: windows vary more than the default 10% allows.
        "--stability-percentage",
        str(stability),
        "--max-trials",
        "6",
    ]


def run_perf_analyzer(
    url: str, concurrency: int, *, protocol: str = "grpc", count: int = 200, stability: int = 25
) -> str:
    exe, env = prepare()
    with tempfile.TemporaryDirectory() as tmp:
        data = input_data(Path(tmp) / "data.json")
        cmd = command(url, concurrency, data, protocol=protocol, count=count, stability=stability)
        cmd[0] = str(exe)
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, timeout=600)
    return done.stdout + done.stderr


@dataclass(frozen=True)
class LoopResult:
    concurrency: int
    requests: int
    seconds: float
    p50_ms: float
    p95_ms: float
    p99_ms: float

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds


def python_loop(url: str, concurrency: int, *, requests: int = 400, protocol: str = "grpc") -> LoopResult:
    """`concurrency` threads, each sending single-row spam_pipeline requests back to back."""
    from scoring.serving import ScoringInput, TritonScoringClient

    rng = random.Random(0)
    rows = [
        ScoringInput(
            text=SAMPLE_TEXTS[i % len(SAMPLE_TEXTS)],
            preview_text="",
            link=[rng.random() for _ in LINK_FEATURES],
            behaviour=[rng.random() for _ in BEHAVIOUR_FEATURES],
        )
        for i in range(64)
    ]
    warm = TritonScoringClient(url, protocol=protocol, timeout_s=30)
    for row in rows[:16]:
        warm.score([row])
    latencies: list[float] = []
    lock = threading.Lock()
    per_thread = max(1, requests // concurrency)

    def worker(offset: int) -> None:
        client = TritonScoringClient(url, protocol=protocol, timeout_s=30)
        mine = []
        for i in range(per_thread):
            started = time.perf_counter()
            client.score([rows[(offset + i) % len(rows)]])
            mine.append((time.perf_counter() - started) * 1000)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker, args=(k * 7,)) for k in range(concurrency)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - started
    latencies.sort()
    q = statistics.quantiles(latencies, n=100)
    return LoopResult(concurrency, len(latencies), seconds, statistics.median(latencies), q[94], q[98])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True, help="host:port of the gRPC (or HTTP) endpoint")
    parser.add_argument("--protocol", default="grpc", choices=["grpc", "http"])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--loop", action="store_true", help="Python loop instead of perf_analyzer")
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--stability", type=int, default=25, help="perf_analyzer --stability-percentage")
    args = parser.parse_args(argv)
    for c in args.concurrency:
        if args.loop:
            r = python_loop(args.url, c, requests=args.requests, protocol=args.protocol)
            print(
                f"concurrency {c}: {r.throughput:.1f} req/s, p50 {r.p50_ms:.2f} ms, "
                f"p95 {r.p95_ms:.2f} ms, p99 {r.p99_ms:.2f} ms ({r.requests} requests)"
            )
        else:
            print(run_perf_analyzer(args.url, c, protocol=args.protocol, count=args.requests, stability=args.stability))


if __name__ == "__main__":
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    django.setup()
    main()
