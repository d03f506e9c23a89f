"""Scale-out: two real Triton servers, two real Celery workers, one server killed mid-load.

The workers get TRITON_URLS with both servers (scoring.triton_pool): requests go round robin,
and when one server dies its requests go to the other within the same call. Afterwards every
accepted post is scored exactly once, no request got a 5xx other than 503, and no scoring task
had to fall back on Celery's retry (the failover happened inside the call, so nothing waited
for a backoff)."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest
import requests

from modelops import triton_server as server_control
from tests.faults.test_faults import assert_scored_exactly_once, in_process_load, shm_files_of_group, wait_all_scored
from tests.fixtures.metrics import samples, total
from tests.fixtures.triton import free_ports, start_tiny_triton
from tests.integration.conftest import wait_until

pytestmark = pytest.mark.integration


def inference_count(server) -> int:
    client = server.client()
    try:
        stats = client.statistics("spam_pipeline")
    finally:
        client.close()
    return sum(int(s.get("inference_count", 0)) for s in stats)


def kill_triton(server) -> None:
    """SIGKILL the server's process group (no clean shutdown) and remove the shared-memory
    files its python-backend stubs leave behind."""
    pid = server_control.read_pid(server.config)
    assert pid is not None
    leftovers = shm_files_of_group(pid)
    os.killpg(pid, signal.SIGKILL)
    wait_until(lambda: server_control.read_pid(server.config) is None, timeout=20, message="triton gone")
    for path in leftovers:
        with contextlib.suppress(OSError):
            os.unlink(path)


def test_two_tritons_one_killed_under_load(api, start_worker, triton_server, tmp_path: Path):
    with start_tiny_triton(tmp_path / "second") as second:
        urls = f"{triton_server.grpc_url},{second.grpc_url}"
        # A long down mark: after the kill every call of this run goes straight to the survivor.
        env = {"TRITON_URLS": urls, "TRITON_DOWN_S": "30"}
        ports = free_ports(2)
        workers = []
        for n, port in enumerate(ports):
            multiproc = tmp_path / f"prometheus{n}"
            multiproc.mkdir()
            workers.append(
                start_worker(
                    concurrency=2, PROMETHEUS_MULTIPROC_DIR=str(multiproc), WORKER_METRICS_PORT=str(port), **env
                )
            )
        first_before, second_before = inference_count(triton_server), inference_count(second)
        load = in_process_load(api).start()
        try:
            load.wait_for(24)
            # Both servers took a share of the load (round robin across both workers' processes).
            wait_until(
                lambda: inference_count(second) > second_before and inference_count(triton_server) > first_before,
                timeout=60,
                message="both servers scoring",
            )
            kill_triton(second)
            survivor_at_kill = inference_count(triton_server)
            load.wait_for(32)  # ingest and scoring go on with one server
        finally:
            load.stop()
        load.assert_no_5xx_but_503()
        wait_all_scored(load.accepted, log=lambda: "\n".join(w.log_tail() for w in workers))
        assert_scored_exactly_once(load.accepted)
        assert inference_count(triton_server) > survivor_at_kill  # the survivor took over
        logs = "\n".join(w.log_text() for w in workers)
        assert "Retry in" not in logs, [line for line in logs.splitlines() if "Retry in" in line][:5]
        # ... and the failover was exercised: calls did reach the dead server and fail there.
        pages = [samples(requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text) for port in ports]
        failed = sum(total(page, "moderation_triton_errors_total", server=second.grpc_url) for page in pages)
        assert failed >= 1
        assert sum(total(page, "moderation_triton_errors_total", server=triton_server.grpc_url) for page in pages) == 0
