"""Scoring candidate and production on every evaluation suite, and the promotion gate.

Per bundle (text, tabular, abuse) and suite of the bundle's category (suites.BUNDLE_CATEGORY:
the spam bundles on the spam suites, the abuse model on its own), both models are scored on the
same frozen rows: the text and abuse bundles on every suite row with text, the tabular bundle on
rows with frozen features (the bootstrap SMS suite has none, so only the text model is compared
there). Metrics are those of feedback.services.evaluation at the live thresholds (the abuse
model's: its queue and remove thresholds), plus the expected calibration error. A benign suite
(every row negative) is compared on its false-positive rates alone.

The gate: a candidate is held back when, on any suite, its F1 is more than
settings.PROMOTION_GATE_MAX_F1_DROP below production's, or its false-positive rate at the remove
threshold (and, where the bundle has one, at the queue threshold) more than
settings.PROMOTION_GATE_MAX_FPR_RISE above it; and likewise against the suite's reference, what
production scored there when the suite was first compared (feedback.services.suite_references:
without it, rounds promoted one after another could each lose the tolerance again). It applies to automatic
promotion and to the button alike; only an admin's audited override (typed reason, explicit
confirmation) promotes a held candidate (feedback.services.promotion.promote_run).
A run without a suite comparison counts as held: nothing vouches for it. That includes a run
whose every suite was skipped (too few rows, one class) while a production model exists; with
no production model at all (the first one) there is nothing to regress from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from django.conf import settings

from feedback.models import EvaluationSuite, SuiteKind
from feedback.services.suite_references import RATE_THRESHOLD, reference_for
from feedback.services.suites import BUNDLE_CATEGORY, suite_expected_sha256, suite_rows, suites_for

Predictor = Callable[[Sequence[Mapping[str, Any]]], np.ndarray]
MIN_SUITE_ROWS = 10  # fewer rows (or one class only) and a suite is listed but not compared
SUITE_METRICS: tuple[tuple[str, str, bool], ...] = (
    # (label, path, higher is better) shown per suite on the run and promote pages
    ("F1", "f1", True),
    ("PR-AUC", "pr_auc", True),
    ("Precision @ remove", "at_remove.precision", True),
    ("Recall @ remove", "at_remove.recall", True),
    ("FPR @ remove", "at_remove.fpr", False),
    ("FPR @ queue", "at_queue.fpr", False),  # the abuse model's queue threshold
    # Shown, not gated: on a suite of a few dozen spam posts one more miss moves it by points.
    ("Spam auto-approved", "at_approve.spam_miss_rate", False),
    ("ECE", "ece", False),
)


def tolerances() -> dict[str, float]:
    return {
        "max_f1_drop": float(getattr(settings, "PROMOTION_GATE_MAX_F1_DROP", 0.01)),
        "max_fpr_rise": float(getattr(settings, "PROMOTION_GATE_MAX_FPR_RISE", 0.005)),
    }


def _dig(metrics: Mapping[str, Any] | None, path: str) -> float | None:
    node: Any = metrics
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return float(node) if isinstance(node, int | float) and not isinstance(node, bool) else None


def _delta(candidate: Mapping[str, Any], production: Mapping[str, Any] | None, path: str) -> float | None:
    c, p = _dig(candidate, path), _dig(production, path)
    return None if c is None or p is None else round(c - p, 6)


def _rows_for(bundle: str, rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    from feedback.services.tabular import usable  # the ML stack: see evaluate_suites

    if bundle == "tabular":
        return [r for r in rows if usable(r)]
    return [r for r in rows if r.get("text")]


# (metric path, tolerance key, higher is better): what the gate holds a candidate back on.
GATED_METRICS: tuple[tuple[str, str, bool], ...] = (
    ("f1", "max_f1_drop", True),
    ("at_remove.fpr", "max_fpr_rise", False),
    ("at_queue.fpr", "max_fpr_rise", False),
)


def threshold_metrics(
    rows: Sequence[Mapping[str, Any]], probs: np.ndarray, thresholds: Mapping[str, Any]
) -> dict[str, Any]:
    """classification_metrics at `thresholds`, and the queue band where they have a queue."""
    # Imported here, not at the top: the dashboard's ML pages import this module for the gate's
    # verdict and metric names, and the web process would otherwise map scikit-learn, SciPy,
    # pandas and XGBoost (about 100 MB resident, benchmarks/memory.py --stack).
    from feedback.services.evaluation import band_metrics, classification_metrics
    from feedback.services.tabular import labels_of

    y = labels_of(rows)
    out = classification_metrics(
        y, probs, remove_threshold=thresholds["remove"], approve_threshold=thresholds["approve"]
    )
    if "queue" in thresholds:  # a model with a queue threshold of its own (the abuse model)
        out["at_queue"] = band_metrics(y, np.asarray(probs, dtype=np.float64), float(thresholds["queue"]))
    return out


def _comparable(suite: EvaluationSuite, y: np.ndarray) -> bool:
    """Both classes, or a benign suite's negatives only (its false-positive rates still count)."""
    if len(y) < MIN_SUITE_ROWS:
        return False
    if suite.kind == SuiteKind.BENIGN:
        return int(y.sum()) == 0
    return 0 < int(y.sum()) < len(y)


def evaluate_suites(
    *,
    bundle: str,
    candidate: Predictor,
    production: Predictor | None,
    thresholds: Mapping[str, Any],
    suites: Sequence[EvaluationSuite] | None = None,
) -> list[dict[str, Any]]:
    """One entry per suite: candidate and production metrics and their deltas (or why skipped),
    and the suite's reference for the bundle, which the first comparison with a production
    model records (a SuiteReference and its AuditLog row: feedback.services.suite_references)."""
    # Imported here, not at the top: the dashboard's ML pages import this module for the gate's
    # verdict and metric names, and the web process would otherwise map scikit-learn, SciPy,
    # pandas and XGBoost (about 100 MB resident, benchmarks/memory.py --stack) for a training
    # run's work.
    from feedback.services.tabular import labels_of

    out: list[dict[str, Any]] = []
    for suite in suites if suites is not None else suites_for(BUNDLE_CATEGORY.get(bundle, "spam")):
        entry: dict[str, Any] = {
            "suite_id": suite.pk,
            "name": suite.name,
            "kind": suite.kind,
            "category": suite.category,
        }
        rows_sha256 = suite_expected_sha256(suite)  # before the rows: see reference_for
        rows = _rows_for(bundle, suite_rows(suite))
        y = labels_of(rows)
        entry["n"] = len(rows)
        if not _comparable(suite, y):
            entry["skipped"] = (
                "no rows with features"
                if bundle == "tabular" and not rows
                else f"{len(rows)} usable rows, {int(y.sum())} spam"
            )
            out.append(entry)
            continue
        entry["candidate"] = threshold_metrics(rows, candidate(rows), thresholds)
        entry["production"] = threshold_metrics(rows, production(rows), thresholds) if production is not None else None
        entry["deltas"] = {path: _delta(entry["candidate"], entry["production"], path) for _, path, _ in SUITE_METRICS}
        if entry["production"] is not None:
            entry["reference"] = _reference(suite, bundle, entry["production"], rows_sha256)
        out.append(entry)
    return out


def _reference(suite: EvaluationSuite, bundle: str, production: Mapping[str, Any], rows_sha256: str) -> dict[str, Any]:
    """The suite's reference for the gate (feedback.services.suite_references), recorded from
    `production` where it has none. A benign suite (every row negative) has no F1 to hold."""
    paths = [path for path, _, _ in GATED_METRICS if not (path == "f1" and suite.kind == SuiteKind.BENIGN)]
    values: dict[str, float] = {}
    for path in paths:
        value = _dig(production, path)
        if value is None:
            continue
        values[path] = value
        threshold = RATE_THRESHOLD.get(path)
        measured_at = _dig(production, threshold) if threshold else None
        if threshold and measured_at is not None:
            values[threshold] = measured_at
    return reference_for(suite=suite, bundle=bundle, rows_sha256=rows_sha256, production=values)


def gate_evaluate(suites: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """The gate over a run's per-bundle suite results: held, and every regression beyond tolerance."""
    tol = tolerances()
    regressions: list[dict[str, Any]] = []
    compared = 0
    for bundle, entries in suites.items():
        for entry in entries:
            if entry.get("skipped") or not entry.get("production"):
                continue
            compared += 1
            cand, prod = entry["candidate"], entry["production"]
            reference = (entry.get("reference") or {}).get("metrics") or {}
            for path, tolerance, higher in GATED_METRICS:
                c = _dig(cand, path)
                for against, value in (("production", _dig(prod, path)), ("reference", reference.get(path))):
                    if c is None or value is None:
                        continue
                    worse_by = value - c if higher else c - value
                    if worse_by > tol[tolerance] + 1e-9:
                        regressions.append(
                            {
                                "bundle": bundle,
                                "suite": entry["name"],
                                "suite_id": entry.get("suite_id"),
                                "metric": path,
                                "candidate": c,
                                "against": against,
                                against: value,
                            }
                        )
    has_production = any(e.get("production") for entries in suites.values() for e in entries)
    return {
        "held": bool(regressions) or (has_production and compared == 0),
        "regressions": regressions,
        "suites_compared": compared,
        "has_production": has_production,
        "tolerances": tol,
    }


def gate_reasons(report: Mapping[str, Any]) -> list[str]:
    """Why the gate holds a run back (empty: it passes)."""
    gate = report.get("gate")
    if not gate:
        return ["the run has no evaluation-suite comparison"]
    reasons = []
    if gate.get("has_production") and not gate.get("suites_compared"):
        reasons.append("no evaluation suite could compare it with production (each was skipped)")
    for r in gate.get("regressions", []):
        what = {"f1": "F1", "at_queue.fpr": "false-positive rate at the queue threshold"}.get(
            r["metric"], "false-positive rate at the remove threshold"
        )
        if r.get("against") == "reference":
            reasons.append(
                f"{r['bundle']} on {r['suite']}: {what} {r['candidate']:.4f} vs the suite's reference "
                f"{r['reference']:.4f} (production when the reference was recorded)"
            )
        else:
            reasons.append(
                f"{r['bundle']} on {r['suite']}: {what} {r['candidate']:.4f} vs production {r['production']:.4f}"
            )
    return reasons


def suite_table(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Rows for the run and promote pages: per bundle and suite, each metric's candidate,
    production, delta and the suite's reference (gated metrics only), and whether the gate counts
    a regression there."""
    regressions = {(r["bundle"], r["suite"], r["metric"]) for r in (report.get("gate") or {}).get("regressions", [])}
    out = []
    for bundle, entries in (report.get("suites") or {}).items():
        for entry in entries:
            cells = []
            reference = (entry.get("reference") or {}).get("metrics") or {}
            for label, path, higher in SUITE_METRICS:
                band = path.split(".")[0]
                if band == "at_queue" and not any(
                    band in (entry.get(side) or {}) for side in ("candidate", "production")
                ):
                    continue  # a bundle without a queue threshold of its own
                c, p = _dig(entry.get("candidate"), path), _dig(entry.get("production"), path)
                delta = (entry.get("deltas") or {}).get(path)
                better = None if delta in (None, 0) else (delta > 0 if higher else delta < 0)
                cells.append(
                    {
                        "label": label,
                        "candidate": c,
                        "production": p,
                        "delta": delta,
                        "reference": reference.get(path),
                        "better": better,
                        "regression": (bundle, entry["name"], path) in regressions,
                    }
                )
            out.append(
                {
                    "bundle": bundle,
                    "name": entry["name"],
                    "kind": entry.get("kind"),
                    "category": entry.get("category") or BUNDLE_CATEGORY.get(bundle, "spam"),
                    "n": entry.get("n"),
                    "skipped": entry.get("skipped"),
                    "cells": cells,
                }
            )
    return out
