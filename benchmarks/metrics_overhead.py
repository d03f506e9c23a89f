"""What the Prometheus instrumentation costs the hot paths (config.metrics).

Times the operations a scoring batch and an ingest transaction perform on their metrics, in
process and in multiprocess mode (PROMETHEUS_MULTIPROC_DIR, as under gunicorn and Celery
prefork), each in a fresh interpreter since prometheus-client picks its mode at import:

    .venv/bin/python benchmarks/metrics_overhead.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import timeit

N = 200_000


def measure() -> None:
    from prometheus_client import Counter, Histogram

    counter = Counter("bench_posts", "posts")
    histogram = Histogram("bench_batch", "batch", buckets=(1, 2, 4, 8, 16, 32, 64, 128))
    labelled = Counter("bench_decisions", "decisions", ["source", "action"])
    child = labelled.labels("auto", "approve")
    inc = timeit.timeit(lambda: counter.inc(64), number=N) / N * 1e6
    observe = timeit.timeit(lambda: histogram.observe(64), number=N) / N * 1e6
    labels_inc = timeit.timeit(lambda: labelled.labels("auto", "approve").inc(3), number=N) / N * 1e6
    child_inc = timeit.timeit(lambda: child.inc(3), number=N) / N * 1e6
    # A 64-post scoring batch: posts scored (inc), batch size (observe), about three actions
    # (labels().inc) and two spam_pipeline requests (a bound histogram child: observe).
    batch = inc + observe + 3 * labels_inc + 2 * observe
    mode = "multiprocess" if os.environ.get("PROMETHEUS_MULTIPROC_DIR") else "in-process"
    print(
        f"{mode:>12}: inc {inc:.2f} us, observe {observe:.2f} us, labels().inc {labels_inc:.2f} us, "
        f"bound child inc {child_inc:.2f} us; a 64-post batch {batch:.1f} us = {batch / 64:.2f} us per post"
    )


def main() -> None:
    if "--child" in sys.argv:
        measure()
        return
    subprocess.run([sys.executable, __file__, "--child"], check=True)
    with tempfile.TemporaryDirectory() as directory:
        env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": directory}
        subprocess.run([sys.executable, __file__, "--child"], check=True, env=env)


if __name__ == "__main__":
    main()
