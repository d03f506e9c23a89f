"""perf_analyzer from tritonclient 2.51's wheel, made runnable, and its CSV report parsed.

The binary ships in the wheel (`<venv>/bin/perf_analyzer`) but links two libraries the wheel
does not carry under the names it asks for: libb64.so.0d and libcudart.so.12. nvidia-pytriton's
wheel bundles both (renamed, in nvidia_pytriton.libs/); we link them under the expected names
in a private folder and put it on LD_LIBRARY_PATH. No GPU is needed: CUDA is only linked.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sysconfig
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIB_DIR = ROOT / "var" / "perf_analyzer" / "lib"
NEEDED = {"libb64.so.0d": "libb64-*.so.0d", "libcudart.so.12": "libcudart-*.so.12*"}


class PerfAnalyzerError(RuntimeError):
    pass


def binary() -> Path:
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


def environment() -> dict[str, str]:
    """Environment in which perf_analyzer finds its libraries (links created once)."""
    LIB_DIR.mkdir(parents=True, exist_ok=True)
    libs = _bundled_libs()
    for name, pattern in NEEDED.items():
        link = LIB_DIR / name
        if link.exists():
            continue
        candidates = sorted(libs.glob(pattern))
        if not candidates:
            raise PerfAnalyzerError(f"no {pattern} in {libs}")
        link.unlink(missing_ok=True)
        link.symlink_to(candidates[0])
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(LIB_DIR), env.get("LD_LIBRARY_PATH", "")) if p)
    return env


def version() -> str:
    out = subprocess.run([str(binary()), "--version"], env=environment(), capture_output=True, text=True, check=False)
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else "unknown"


@dataclass(frozen=True)
class PerfRow:
    """One concurrency level of a perf_analyzer run; times in milliseconds."""

    concurrency: int
    throughput: float  # inferences per second
    p50_ms: float
    p90_ms: float
    p95_ms: float
    p99_ms: float
    avg_ms: float
    client_send_ms: float
    network_server_ms: float  # network + server send/recv
    server_queue_ms: float
    server_compute_input_ms: float
    server_compute_infer_ms: float
    server_compute_output_ms: float
    client_recv_ms: float

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def _ms(row: dict[str, str], key: str) -> float:
    return float(row.get(key) or 0.0) / 1000.0  # the CSV reports microseconds


def parse_csv(path: Path) -> list[PerfRow]:
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for row in rows:
        avg_us = sum(
            float(row.get(k) or 0.0)
            for k in (
                "Client Send",
                "Network+Server Send/Recv",
                "Server Queue",
                "Server Compute Input",
                "Server Compute Infer",
                "Server Compute Output",
                "Client Recv",
            )
        )
        out.append(
            PerfRow(
                concurrency=int(float(row["Concurrency"])),
                throughput=float(row["Inferences/Second"]),
                p50_ms=_ms(row, "p50 latency"),
                p90_ms=_ms(row, "p90 latency"),
                p95_ms=_ms(row, "p95 latency"),
                p99_ms=_ms(row, "p99 latency"),
                avg_ms=avg_us / 1000.0,
                client_send_ms=_ms(row, "Client Send"),
                network_server_ms=_ms(row, "Network+Server Send/Recv"),
                server_queue_ms=_ms(row, "Server Queue"),
                server_compute_input_ms=_ms(row, "Server Compute Input"),
                server_compute_infer_ms=_ms(row, "Server Compute Infer"),
                server_compute_output_ms=_ms(row, "Server Compute Output"),
                client_recv_ms=_ms(row, "Client Recv"),
            )
        )
    return sorted(out, key=lambda r: r.concurrency)


def run(
    *,
    model: str,
    url: str,
    input_data: Path,
    csv_path: Path,
    concurrency: tuple[int, int],
    protocol: str = "grpc",
    request_count: int = 200,
    stability_percentage: int = 15,
    max_trials: int = 8,
    log_path: Path | None = None,
) -> tuple[list[str], list[PerfRow]]:
    """Run perf_analyzer over a concurrency range; returns the exact command and the rows."""
    cmd = [
        str(binary()),
        "-m",
        model,
        "-u",
        url,
        "-i",
        protocol,
        "-b",
        "1",
        "--concurrency-range",
        f"{concurrency[0]}:{concurrency[1]}:1",
        "--measurement-mode",
        "count_windows",
        "--measurement-request-count",
        str(request_count),
        "--stability-percentage",
        str(stability_percentage),
        "--max-trials",
        str(max_trials),
        "--input-data",
        str(input_data),
        "--percentile",
        "95",
        "-f",
        str(csv_path),
    ]
    result = subprocess.run(cmd, env=environment(), capture_output=True, text=True, check=False, timeout=3600)
    if log_path is not None:
        log_path.write_text(result.stdout + "\n" + result.stderr)
    if result.returncode != 0 or not csv_path.exists():
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-25:])
        raise PerfAnalyzerError(f"perf_analyzer failed ({result.returncode}) for {model}:\n{tail}")
    return cmd, parse_csv(csv_path)


if __name__ == "__main__":  # `python benchmarks/perf_analyzer.py` prints the version: set-up check
    print(version())
