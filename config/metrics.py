"""Prometheus metrics of the application (prometheus-client), for web and workers.

The metric objects are defined in core.metrics, in one place, and incremented by the services
that do the work; this module exports them (and the gauges read at scrape time). Names and what
increments them:

| metric | type | incremented |
| --- | --- | --- |
| moderation_posts_ingested_total | counter | once per ingest transaction, by the posts it created |
| moderation_posts_scored_total | counter | once per scoring batch, by the Score rows it wrote |
| moderation_scoring_batch_size | histogram | once per scoring batch |
| moderation_posts_text_model_skipped_total | counter | per scoring batch, by its Score rows the cascade scored |
| moderation_decisions_total{source,action,category} | counter | auto: per batch and labels; moderator: per decision |
| moderation_triton_request_seconds{server} | histogram | once per spam_pipeline request (up to 32 posts) |
| moderation_triton_errors_total{server,kind} | counter | per failed request (kind: unavailable, rejected) |
| moderation_webhook_failures_total | counter | per failed delivery attempt |
| moderation_training_runs_total{status} | counter | per finished training run |
| moderation_queue_depth{queue} | gauge | at scrape time: messages waiting in the broker queue |
| moderation_unscored_oldest_age_seconds | gauge | at scrape time: age of the oldest post not yet scored |

Hot path: ingest and scoring touch a metric once per request or batch, never per post (one
counter increment costs about a microsecond in-process and a few in multiprocess mode).

Multiprocess mode: gunicorn and Celery prefork run several processes; with
PROMETHEUS_MULTIPROC_DIR set (an empty, process-private directory, wiped at start), each
process writes its values to files there and a scrape adds them up (MultiProcessCollector).
The directory must be set in the environment before the process starts (prometheus-client
reads it at import). Without it (``make run``, tests) each process reports its own values.

Access: /metrics answers only to a client address in METRICS_ALLOWED_NETWORKS (CIDRs; default
loopback only) or to a request with ``Authorization: Bearer <METRICS_BEARER_TOKEN>`` (when that
is set). Anything else gets 403. Workers serve the same page on WORKER_METRICS_PORT (when set)
with the same rules (config.celery_app).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

import core.metrics  # noqa: F401 - registers the application's metrics wherever this page is served

logger = logging.getLogger(__name__)


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


# --- scrape-time gauges (web only: one broker, one database) ---------------------------------
class QueueCollector(Collector):
    """Broker queue depths and the age of the oldest unscored post, read when scraped."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from django.conf import settings

        from config.health import broker_client

        depth = GaugeMetricFamily("moderation_queue_depth", "Messages waiting in a broker queue.", labels=["queue"])
        try:
            client = broker_client()
            for queue in queue_names(settings):
                depth.add_metric([queue], float(client.llen(queue)))
        except Exception as exc:  # a scrape must not fail because the broker is down
            logger.warning("metrics.queue_depth_failed error=%s", type(exc).__name__)
        yield depth
        age = GaugeMetricFamily(
            "moderation_unscored_oldest_age_seconds", "Age of the oldest post still waiting for its first score."
        )
        try:
            from dashboard.selectors.metrics import unscored_oldest_age_s

            age.add_metric([], unscored_oldest_age_s())
        except Exception as exc:
            logger.warning("metrics.unscored_age_failed error=%s", type(exc).__name__)
        yield age


def queue_names(settings: Any) -> list[str]:
    """The default queue (scoring) and every queue of CELERY_TASK_ROUTES (training)."""
    names = [str(getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", "celery"))]
    for route in getattr(settings, "CELERY_TASK_ROUTES", {}).values():
        queue = route.get("queue") if isinstance(route, dict) else None
        if queue and queue not in names:
            names.append(str(queue))
    return names


def registry(*, with_queues: bool) -> CollectorRegistry:
    """What a scrape reports: every process of this pod (multiprocess mode) or this process."""
    if multiprocess_dir() is None:
        target = CollectorRegistry()
        target.register(_ProcessRegistry())
    else:
        target = CollectorRegistry()
        MultiProcessCollector(target)
    if with_queues:
        target.register(QueueCollector())
    return target


class _ProcessRegistry(Collector):
    """The default registry (this process's metrics, process_* and python_* included)."""

    def collect(self) -> Iterable[Any]:
        return REGISTRY.collect()


# --- access -----------------------------------------------------------------------------------
@lru_cache(maxsize=8)
def _networks(spec: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(n.strip(), strict=False) for n in spec if n.strip())


def allowed(*, remote_addr: str, authorization: str) -> bool:
    """The client's address is in METRICS_ALLOWED_NETWORKS, or it sent the bearer token."""
    from django.conf import settings

    token = str(getattr(settings, "METRICS_BEARER_TOKEN", "") or "")
    given = authorization.removeprefix("Bearer ").strip() if authorization.startswith("Bearer ") else ""
    if token and given and hmac.compare_digest(given.encode(), token.encode()):
        return True
    try:
        address = ipaddress.ip_address(remote_addr)
    except ValueError:
        return False
    networks = _networks(tuple(getattr(settings, "METRICS_ALLOWED_NETWORKS", ("127.0.0.1/32", "::1/128"))))
    return any(address in network for network in networks)


def metrics_view(request: Any) -> Any:
    """GET /metrics on the web processes (routed by config.ops)."""
    from django.http import HttpResponse, JsonResponse

    from api.errors import error_body

    if not allowed(
        remote_addr=request.META.get("REMOTE_ADDR", ""), authorization=request.headers.get("Authorization", "")
    ):
        return JsonResponse(error_body("permission_denied", "Not allowed."), status=403)
    return HttpResponse(generate_latest(registry(with_queues=True)), content_type=CONTENT_TYPE_LATEST)


def wsgi_app(*, with_queues: bool) -> Callable[..., Iterable[bytes]]:
    """The same page as a plain WSGI app, for a worker's metrics port."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "/") not in ("/", "/metrics"):
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found\n"]
        if not allowed(remote_addr=environ.get("REMOTE_ADDR", ""), authorization=environ.get("HTTP_AUTHORIZATION", "")):
            start_response("403 Forbidden", [("Content-Type", "application/json")])
            return [b'{"error": {"code": "permission_denied", "message": "Not allowed.", "fields": {}}}']
        body = generate_latest(registry(with_queues=with_queues))
        start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST), ("Content-Length", str(len(body)))])
        return [body]

    return app


def serve_worker_metrics(port: int, *, addr: str = "0.0.0.0") -> None:  # noqa: S104 - scraped by pod IP
    """A daemon thread serving wsgi_app on `port` (the Celery main process calls this)."""
    import threading
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    from prometheus_client.exposition import ThreadingWSGIServer

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

    server = make_server(addr, port, wsgi_app(with_queues=False), ThreadingWSGIServer, handler_class=QuietHandler)
    threading.Thread(target=server.serve_forever, name="worker-metrics", daemon=True).start()
