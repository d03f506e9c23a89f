"""The web process holds no ML stack: loading every URL pattern (every view module, the ML
dashboard's included) and the WSGI application imports neither torch and transformers nor
scikit-learn, SciPy, pandas, XGBoost or pyarrow. The training run and a dataset snapshot import
them when they start (benchmarks/memory.py --stack measures what this saves)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ML_STACK = ("torch", "transformers", "onnxruntime", "sklearn", "scipy", "pandas", "xgboost", "pyarrow")

PROBE = f"""
import sys
import django
django.setup()
from django.urls import get_resolver
from config.wsgi import application
resolver = get_resolver()
resolver.url_patterns  # imports every view module
assert "feedback.views" in sys.modules and application is not None
print(sorted(name for name in {ML_STACK!r} if name in sys.modules))
"""


def test_web_starts_without_the_ml_stack():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
