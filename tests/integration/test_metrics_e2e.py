"""Metrics after real work: ingest through the API (this process), a real Celery worker scoring
through the real Triton test server, then both pages: the web's /metrics (this process) and the
worker's own metrics port (multiprocess mode: PROMETHEUS_MULTIPROC_DIR shared by its pool
processes). The worker logs JSON; its batch line carries the post ids and the request id of the
ingest request that published the task."""

from __future__ import annotations

import json
import uuid

import pytest
import requests

from moderation.models import Post, PostStatus
from tests.faults.conftest import post_body
from tests.fixtures.metrics import Samples, samples, total
from tests.fixtures.triton import free_ports
from tests.integration.conftest import wait_until


@pytest.mark.integration
def test_metrics_count_real_ingest_and_scoring(api, start_worker, tmp_path):
    (port,) = free_ports(1)
    multiproc = tmp_path / "prometheus"
    multiproc.mkdir()
    worker = start_worker(
        concurrency=2, PROMETHEUS_MULTIPROC_DIR=str(multiproc), WORKER_METRICS_PORT=str(port), LOG_FORMAT="json"
    )
    web_before = samples(api.client.get("/metrics").content.decode())
    request_id = f"metrics-{uuid.uuid4().hex[:12]}"
    run = uuid.uuid4().hex[:8]
    ids = []
    for n in range(6):
        response = api.post("posts", post_body(run, n), HTTP_X_REQUEST_ID=request_id)
        assert response.status_code == 201, response.content
        ids.append(response.json()["id"])
    wait_until(
        lambda: not Post.objects.filter(id__in=ids, status=PostStatus.RECEIVED).exists(),
        timeout=120,
        interval=0.3,
        message=f"posts scored\n{worker.log_tail()}",
    )

    web = samples(api.client.get("/metrics").content.decode())
    assert total(web, "moderation_posts_ingested_total") - total(web_before, "moderation_posts_ingested_total") == 6
    assert ("moderation_queue_depth", (("queue", "celery"),)) in web
    assert ("moderation_queue_depth", (("queue", "training"),)) in web
    assert total(web, "moderation_unscored_oldest_age_seconds") >= 0.0

    def worker_page() -> Samples | None:
        found = samples(requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text)
        return found if total(found, "moderation_posts_scored_total") >= 6 else None

    scraped = wait_until(worker_page, timeout=30, message="the worker's page counts the scored posts")
    assert total(scraped, "moderation_posts_scored_total") == 6
    assert total(scraped, "moderation_decisions_total", source="auto") == 6
    assert total(scraped, "moderation_scoring_batch_size_sum") == 6
    assert total(scraped, "moderation_scoring_batch_size_count") >= 1
    assert total(scraped, "moderation_triton_request_seconds_count") >= 1
    assert total(scraped, "moderation_triton_errors_total") == 0

    records = [json.loads(line) for line in worker.log_text().splitlines() if line.startswith("{")]
    batches = [r for r in records if str(r.get("message", "")).startswith("scoring.batch_scored")]
    assert batches, worker.log_tail()
    assert sorted(pid for r in batches for pid in r["post_ids"]) == sorted(ids)
    assert request_id in {r["request_id"] for r in batches}
