"""/readyz latency with every dependency up: the real PostgreSQL and Redis and a real Triton
(tiny models, tests/fixtures/triton.py), through Django's full middleware stack in process.
A pytest module so it can use the test fixtures; not part of the suite (benchmarks/ is outside
testpaths). Run:

    PYTHONPATH=. DJANGO_SETTINGS_MODULE=config.settings.test .venv/bin/pytest benchmarks/readyz_latency.py \\
        -p tests.fixtures.triton -s -q
"""

from __future__ import annotations

import time

REQUESTS = 300


def test_readyz_latency(client, db, triton_settings):
    for _ in range(5):  # the first checks open the connections
        client.get("/readyz")
    timings = []
    for _ in range(REQUESTS):
        started = time.perf_counter()
        response = client.get("/readyz")
        timings.append((time.perf_counter() - started) * 1000.0)
        assert response.status_code == 200, response.content
    timings.sort()

    def at(q: float) -> float:
        return timings[min(int(q * len(timings)), len(timings) - 1)]

    quantiles = ", ".join(f"p{round(q * 100)} {at(q):.1f} ms" for q in (0.5, 0.95, 0.99))
    print(f"\n/readyz over {REQUESTS}: {quantiles}, max {timings[-1]:.1f} ms")
