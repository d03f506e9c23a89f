"""Work a web process would otherwise do on its first requests, done when it starts.

Measured (benchmarks/e2e_load.py, `cold_start`): the first ?wait_ms=50 requests after gunicorn
started took 200-660 ms against ~25 ms warm, because the first request of each worker imports
every view module behind the URL conf (~120 ms) and the pre-publish check's modules
(scoring.services.inline, and above all tritonclient.grpc, which the Triton client imports
when first made: 40-210 ms inside the first checks' model call) while the requests behind
them wait for the import lock. Importing them at start moves that cost out of the requests:
the first 60 checks after a start, max 41 ms and none over 50 ms (was 240-380 ms for the
first three).

Only imports: no connection is opened here, so this is also safe in a process that forks
afterwards (gunicorn --preload): PostgreSQL connections and the Triton gRPC channel must be
made in the process that uses them.
"""

from __future__ import annotations

import gc
import logging

from django.urls import URLPattern, URLResolver, get_resolver

from moderation import language
from scoring import api as scoring_api

logger = logging.getLogger(__name__)


def _walk(patterns: list[URLPattern | URLResolver]) -> int:
    count = 0
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            count += _walk(pattern.url_patterns)  # importing a resolver's urlconf imports its views
        else:
            count += 1
    return count


def warm_up() -> None:
    """Import the URL conf's views and what the scoring facade imports lazily, then freeze what exists
    (gc.freeze); never raises."""
    try:
        _walk(get_resolver().url_patterns)
        scoring_api.warm_up()
        language.preload()  # the language detector's model, used by every ingest
    except Exception:  # start serving anyway: the first requests then do it
        logger.warning("config.warm_up_failed", exc_info=True)
    # Everything imported so far lives as long as the process: move it out of the collector's
    # reach. Otherwise every full (generation 2) collection walks the hundreds of thousands of
    # objects of Django, DRF, grpc and numpy, a pause that lands in whichever request triggers
    # it (the standard advice for pre-loaded servers, see gc.freeze's documentation).
    gc.freeze()
