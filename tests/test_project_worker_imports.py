"""A Celery worker or beat that does not train holds no ML stack: starting one (the Django fixup's
start-up, then every task module) imports neither torch and transformers nor scikit-learn,
SciPy, pandas or XGBoost. The training task imports them when a run starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ML_STACK = ("torch", "transformers", "onnxruntime", "sklearn", "scipy", "pandas", "xgboost")

PROBE = f"""
import sys
from config.celery_app import app
app.loader.import_default_modules()  # what worker and beat do at start: django.setup(), tasks
import feedback.tasks, scoring.tasks
assert "feedback.run_training" in app.tasks and "django.contrib.admin" in sys.modules
print(sorted(name for name in {ML_STACK!r} if name in sys.modules))
"""


def _loaded(env: dict[str, str]) -> str:
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


def test_worker_and_beat_start_without_the_ml_stack():
    env = {k: v for k, v in os.environ.items() if k != "CELERY_SKIP_CHECKS"}
    assert _loaded({**env, "DJANGO_SETTINGS_MODULE": "config.settings.test"}) == "[]"
