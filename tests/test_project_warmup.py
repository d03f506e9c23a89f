"""A web process imports what its first requests would (config/warmup.py), at start, and
freezes those objects out of the garbage collector's full collections."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import sys
before = set(sys.modules)
import config.wsgi  # noqa: F401
from django.urls import URLResolver, get_resolver

def views(patterns):
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from views(p.url_patterns)
        else:
            yield p.callback.__module__

fresh = set(sys.modules) - before
expected = ["scoring.services.inline", "scoring.tasks", "tritonclient.grpc", "api.views"]
for name in [*expected, *views(get_resolver().url_patterns)]:
    assert name in fresh, name
import gc
assert gc.get_freeze_count() > 100_000, gc.get_freeze_count()  # start-up objects out of the GC's walks
print("ok")
"""


def test_wsgi_start_imports_the_views_and_the_inline_check():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


def test_a_failing_warm_up_does_not_stop_the_process(monkeypatch, caplog):
    from config import warmup

    def broken() -> None:
        raise RuntimeError("urlconf broken")

    monkeypatch.setattr(warmup, "get_resolver", broken)
    warmup.warm_up()
    assert "config.warm_up_failed" in caplog.text
