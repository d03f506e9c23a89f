"""Liveness and readiness: /healthz and /readyz for load balancers and orchestrators.

- /healthz: the process answers. No I/O, so a slow dependency never gets a web process
  restarted by its liveness probe.
- /readyz: the database, the cache, the broker and Triton answer, and Triton serves the
  expected model versions. 200 when all are ready; 503 in the API's error shape naming the
  failing dependencies otherwise.

Both are unauthenticated and say nothing an outsider could use: dependency names and
"unavailable", never a host name, a version or an error text (those go to the log).

Cheap: the three network checks (cache, broker, Triton) run concurrently on a small thread
pool while the request's own thread checks the database, each bounded by READINESS_TIMEOUT_S
(0.5 s). A check that has not answered by then counts as failing; while it is still running
a later probe does not start a second one for the same dependency (it reports it failing),
so a hung dependency ties up at most one pool thread per dependency, not one per probe.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from typing import Any

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse

logger = logging.getLogger(__name__)

DEPENDENCIES = ("database", "cache", "broker", "triton")
UNAVAILABLE = "unavailable"
OK = "ok"

_pool = ThreadPoolExecutor(max_workers=len(DEPENDENCIES), thread_name_prefix="readiness")
_running: dict[str, Future[None]] = {}
_running_lock = threading.Lock()


def timeout_s() -> float:
    return float(getattr(settings, "READINESS_TIMEOUT_S", 0.5))


# --- the checks: each returns None when ready and raises otherwise --------------------------
def check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def check_cache() -> None:
    from django.core.cache import cache

    # A round trip through the cache's own client, breaker and key prefix: what requests use.
    cache.get("readiness-probe")


@lru_cache(maxsize=8)
def _broker_client(url: str, timeout: float) -> redis.Redis:
    return redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)


def broker_client() -> redis.Redis:
    """A Redis client on the Celery broker (the broker is Redis: kombu's redis transport). Also
    read by config.metrics for queue depths."""
    return _broker_client(str(settings.CELERY_BROKER_URL), timeout_s())


def check_broker() -> None:
    if not broker_client().ping():
        raise ConnectionError("broker did not answer PING")


def check_triton() -> None:
    from scoring.services.inference import serving_ready

    if not serving_ready(timeout_s=timeout_s()):
        raise ConnectionError("no Triton server is ready with the expected model versions")


CHECKS: dict[str, Callable[[], None]] = {
    "database": check_database,
    "cache": check_cache,
    "broker": check_broker,
    "triton": check_triton,
}


def _submit(name: str, check: Callable[[], None]) -> Future[None] | None:
    """Start `check` on the pool unless the previous one for `name` is still running."""
    with _running_lock:
        previous = _running.get(name)
        if previous is not None and not previous.done():
            return None
        future = _pool.submit(check)
        _running[name] = future
        return future


def _outcome(name: str, run: Callable[[], None]) -> str:
    try:
        run()
    except Exception as exc:
        logger.warning("health.not_ready dependency=%s error=%s: %s", name, type(exc).__name__, exc)
        return UNAVAILABLE
    return OK


def readiness() -> dict[str, str]:
    """dependency -> "ok" | "unavailable", checked concurrently within READINESS_TIMEOUT_S."""
    futures = {name: _submit(name, CHECKS[name]) for name in DEPENDENCIES if name != "database"}
    results = {"database": _outcome("database", CHECKS["database"])}
    if results["database"] != OK:
        # A broken connection must not be reused by the next probe or request of this thread.
        connection.close_if_unusable_or_obsolete()
    deadline = timeout_s()
    for name, future in futures.items():
        if future is None:
            logger.warning("health.not_ready dependency=%s error=previous check still running", name)
            results[name] = UNAVAILABLE
            continue

        def wait(future: Future[None] = future) -> None:
            future.result(timeout=deadline)

        results[name] = _outcome(name, wait)
    return {name: results[name] for name in DEPENDENCIES}


# --- views (routed by config.ops.OpsEndpointsMiddleware, ahead of host checks) ---------------
def healthz(request: HttpRequest) -> HttpResponse:
    return JsonResponse({"status": OK})


def readyz(request: HttpRequest) -> HttpResponse:
    from api.errors import error_body

    checks = readiness()
    failing = [name for name, state in checks.items() if state != OK]
    if not failing:
        return JsonResponse({"status": OK, "checks": checks})
    body: dict[str, Any] = error_body(
        "not_ready", f"Not ready: {', '.join(failing)}.", {name: [UNAVAILABLE] for name in failing}
    )
    response = JsonResponse(body, status=503)
    response["Retry-After"] = "5"
    return response
