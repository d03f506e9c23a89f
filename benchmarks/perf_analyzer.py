"""perf_analyzer over a concurrency range, and its CSV report parsed.

Finding the binary and linking the libraries it needs is modelops/perf_analyzer.py's (the one
wrapper): the wheel's binary links libb64.so.0d and libcudart.so.12, which nvidia-pytriton's
wheel bundles under other names. No GPU is needed: CUDA is only linked.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from modelops.perf_analyzer import PerfAnalyzerError, binary, environment, version

__all__ = ["PerfAnalyzerError", "PerfRow", "binary", "environment", "parse_csv", "run", "version"]


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
