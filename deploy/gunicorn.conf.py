"""gunicorn settings of the web image (Dockerfile target `web`).

Sized from environment variables so one image serves every size of node:
- WEB_CONCURRENCY processes (default 2) x WEB_THREADS threads (default 4): the shape measured
  by benchmarks/e2e_load.py (--web-workers 2 --web-threads 4) on 2 cores.
- Prometheus multiprocess mode (config.metrics): PROMETHEUS_MULTIPROC_DIR is emptied when the
  arbiter starts, and a worker that exits is marked dead so its live gauges are dropped.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

bind = os.environ.get("WEB_BIND", "0.0.0.0:8000")  # inside a container: every interface
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
worker_class = "gthread"
threads = int(os.environ.get("WEB_THREADS", "4"))
timeout = int(os.environ.get("WEB_TIMEOUT", "30"))
graceful_timeout = int(os.environ.get("WEB_GRACEFUL_TIMEOUT", "30"))
keepalive = 5
# Recycle workers now and then (slow leaks), staggered so they do not restart together.
max_requests = int(os.environ.get("WEB_MAX_REQUESTS", "20000"))
max_requests_jitter = max_requests // 10
# Access lines cost CPU on the ingest path; request counts and latencies are in /metrics.
accesslog = os.environ.get("WEB_ACCESS_LOG") or None
errorlog = "-"
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")


def on_starting(server: Any) -> None:
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        for stale in path.glob("*.db"):
            stale.unlink()


def child_exit(server: Any, worker: Any) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
