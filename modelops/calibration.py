"""Calibration: fitting a calibrator on validation data, measuring calibration, and folding the
calibrator into the model itself so every place that serves or evaluates the model applies it.

- Text model: temperature scaling (one scalar T, fitted by minimising the validation negative
  log-likelihood). The spam probability is softmax(logits / T); dividing the classifier head's
  weight and bias by T gives exactly those logits, so the checkpoint, its ONNX and INT8 exports
  and the Triton text_classifier all serve calibrated scores with no serving change. A positive
  T never changes which class has the larger logit, so F1 at 0.5 is unchanged.
- Tree models (link, behaviour, fusion): Platt scaling of the margin, p = sigmoid(a * m + b).
  Scaling every leaf value by `a` and moving the base score gives a booster whose margin is
  a * m + b, so served probabilities, SHAP contributions and offline evaluation all agree.
  Platt (two parameters) rather than isotonic: reviewer validation splits are small, and a
  monotone step function fitted on a few hundred rows over-fits and ties scores.

Expected calibration error is hand-written: scikit-learn (1.9) has `calibration_curve` but no
ECE, and the reliability table here also keeps the per-bin counts the diagram needs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.optimize import minimize, minimize_scalar

ECE_BINS = 10
TEMPERATURE_BOUNDS = (0.05, 20.0)
MIN_CALIBRATION_ROWS = 30  # fewer validation rows (or < MIN_PER_CLASS of a class): no calibrator
MIN_PER_CLASS = 5
FOLD_TOLERANCE = 1e-5  # max |p| difference, folded model vs calibrator applied on top


def _arrays(labels: Sequence[int] | np.ndarray, probs: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(labels, dtype=np.float64).reshape(-1), np.asarray(probs, dtype=np.float64).reshape(-1)


def reliability_bins(
    labels: Sequence[int] | np.ndarray, probs: Sequence[float] | np.ndarray, *, bins: int = ECE_BINS
) -> list[dict[str, Any]]:
    """Equal-width bins of the predicted spam probability: per bin the row count, the mean
    prediction and the observed spam share (None for an empty bin)."""
    y, p = _arrays(labels, probs)
    index = np.minimum((p * bins).astype(np.int64), bins - 1)
    out = []
    for b in range(bins):
        mask = index == b
        n = int(mask.sum())
        out.append(
            {
                "lo": round(b / bins, 4),
                "hi": round((b + 1) / bins, 4),
                "n": n,
                "mean_predicted": round(float(p[mask].mean()), 6) if n else None,
                "observed": round(float(y[mask].mean()), 6) if n else None,
            }
        )
    return out


def expected_calibration_error(
    labels: Sequence[int] | np.ndarray, probs: Sequence[float] | np.ndarray, *, bins: int = ECE_BINS
) -> float | None:
    """Sum over equal-width bins of (bin share of rows) * |observed spam share - mean prediction|."""
    y, _ = _arrays(labels, probs)
    if len(y) == 0:
        return None
    total = 0.0
    for row in reliability_bins(labels, probs, bins=bins):
        if row["n"]:
            total += row["n"] / len(y) * abs(row["observed"] - row["mean_predicted"])
    return round(total, 6)


def enough_to_calibrate(labels: Sequence[int] | np.ndarray) -> bool:
    y = np.asarray(labels, dtype=np.int64)
    spam = int(y.sum())
    return len(y) >= MIN_CALIBRATION_ROWS and min(spam, len(y) - spam) >= MIN_PER_CLASS


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-z)))


def logit_margin(logits: np.ndarray, spam_index: int = 1) -> np.ndarray:
    """Two-class logits -> spam margin (spam logit minus ham logit): softmax(l)[spam] = sigmoid(margin)."""
    z = np.asarray(logits, dtype=np.float64)
    return np.asarray(z[:, spam_index] - z[:, 1 - spam_index])


def smoothed_targets(labels: Sequence[int] | np.ndarray) -> np.ndarray:
    """Platt's targets: (N+ + 1) / (N+ + 2) for spam, 1 / (N- + 2) for ham. On a validation split
    the model separates perfectly, plain log-loss is minimised by infinitely sharp scores (T -> 0,
    a -> infinity); these targets keep the fit finite and barely move it otherwise."""
    y = np.asarray(labels, dtype=np.int64)
    n_pos, n_neg = int(y.sum()), int(len(y) - y.sum())
    return np.where(y == 1, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))


def _log_loss(z: np.ndarray, target: np.ndarray) -> float:
    # -[t log sigmoid(z) + (1 - t) log(1 - sigmoid(z))], computed stably.
    return float(np.mean(np.logaddexp(0.0, z) - target * z))


def fit_temperature(margins: np.ndarray, labels: Sequence[int] | np.ndarray) -> float:
    """The T minimising the log-loss of sigmoid(margin / T) against the smoothed targets
    (bounded search over log T)."""
    m = np.asarray(margins, dtype=np.float64)
    target = smoothed_targets(labels)
    lo, hi = (math.log(v) for v in TEMPERATURE_BOUNDS)
    result = minimize_scalar(
        lambda log_t: _log_loss(m / math.exp(log_t), target),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-6},
    )
    return float(math.exp(result.x))


def apply_temperature(margins: np.ndarray, temperature: float) -> np.ndarray:
    return _sigmoid(np.asarray(margins, dtype=np.float64) / temperature)


def fit_platt(margins: np.ndarray, labels: Sequence[int] | np.ndarray) -> tuple[float, float]:
    """(a, b) of p = sigmoid(a * margin + b), minimising the log-loss against the smoothed
    targets (Platt's method)."""
    m = np.asarray(margins, dtype=np.float64)
    target = smoothed_targets(labels)
    result = minimize(lambda ab: _log_loss(ab[0] * m + ab[1], target), x0=np.array([1.0, 0.0]), method="L-BFGS-B")
    return float(result.x[0]), float(result.x[1])


def apply_platt(margins: np.ndarray, a: float, b: float) -> np.ndarray:
    return _sigmoid(a * np.asarray(margins, dtype=np.float64) + b)


def prob_to_margin(probs: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(probs, dtype=np.float64), 1e-12, 1 - 1e-12)
    return np.asarray(np.log(p) - np.log1p(-p))


def calibration_summary(
    labels: Sequence[int] | np.ndarray,
    before: Sequence[float] | np.ndarray,
    after: Sequence[float] | np.ndarray,
    *,
    method: str,
    parameters: dict[str, float],
    fitted_on: str,
) -> dict[str, Any]:
    """What model cards and run pages show: ECE and the reliability table, before and after."""
    return {
        "method": method,
        "parameters": parameters,
        "fitted_on": fitted_on,
        "bins": ECE_BINS,
        "ece_before": expected_calibration_error(labels, before),
        "ece_after": expected_calibration_error(labels, after),
        "reliability_before": reliability_bins(labels, before),
        "reliability_after": reliability_bins(labels, after),
    }


# --- folding the calibrator into the model ------------------------------------------------


def fold_temperature(model: Any, temperature: float) -> None:
    """Divide a sequence classifier's output layer by T in place (DistilBERT: `classifier`)."""
    import torch

    head = model.classifier
    with torch.no_grad():
        head.weight.div_(temperature)
        head.bias.div_(temperature)


def _parse_base_score(raw: str) -> float:
    # XGBoost 3 writes "[4.62E-1]" (a vector, one value per target); older versions "4.62E-1".
    return float(json.loads(raw)[0]) if raw.strip().startswith("[") else float(raw)


def fold_platt(booster: Any, a: float, b: float) -> Any:
    """A copy of a binary:logistic booster whose margin is a * margin + b: every leaf value
    (split_conditions and base_weights of leaf nodes) times `a`, and the constant left over
    (a * m0 + b - m0, m0 the base margin) added to every leaf of the first tree, which each row
    reaches exactly once. The base score stays as it is: moving it instead would saturate at
    0 or 1 in float32 for a confident calibrator. Checked by the caller with check_fold."""
    import xgboost as xgb

    model = json.loads(bytes(booster.save_raw("json")))
    learner = model["learner"]
    base = _parse_base_score(learner["learner_model_param"]["base_score"])
    base_margin = math.log(base) - math.log1p(-base)
    shift = a * base_margin + b - base_margin
    for index, tree in enumerate(learner["gradient_booster"]["model"]["trees"]):
        for node, left in enumerate(tree["left_children"]):
            if left == -1:
                value = tree["split_conditions"][node] * a + (shift if index == 0 else 0.0)
                tree["split_conditions"][node] = value
                tree["base_weights"][node] = value
    folded = xgb.Booster()
    folded.load_model(bytearray(json.dumps(model).encode("utf-8")))
    return folded


def check_fold(original: Any, folded: Any, x: np.ndarray, names: Sequence[str], a: float, b: float) -> float:
    """Max |p| difference between the folded booster and Platt applied to the original's margin
    on `x`; raises if above FOLD_TOLERANCE (the served model must be the evaluated one)."""
    import xgboost as xgb

    dmatrix = xgb.DMatrix(x, feature_names=list(names))
    expected = apply_platt(original.predict(dmatrix, output_margin=True).astype(np.float64), a, b)
    actual = folded.predict(dmatrix).astype(np.float64)
    worst = float(np.max(np.abs(expected - actual))) if len(x) else 0.0
    if worst > FOLD_TOLERANCE:
        raise ValueError(f"folding Platt scaling into the booster changed scores by {worst:.2e}")
    return worst


def calibration_markdown(calibration: dict[str, Any] | None, *, model: str) -> list[str]:
    """The model card's calibration section: the calibrator, ECE before/after, and the
    reliability table (per probability bin: rows, mean prediction, observed spam share)."""
    out = [f"## Calibration ({model})"]
    if not calibration or calibration.get("method") in (None, "none"):
        reason = (calibration or {}).get("reason", "no calibrator was fitted")
        return [*out, f"- Not calibrated: {reason}.", ""]
    params = ", ".join(f"{k} = {v}" for k, v in (calibration.get("parameters") or {}).items())
    out.append(f"- Calibrator: {calibration['method']} ({params}); {calibration.get('applied', '')}.")
    for part in ("validation", "test"):
        summary = calibration.get(part)
        if not summary:
            continue
        out += [
            f"- {part.capitalize()}: expected calibration error {summary['ece_before']:.4f} before, "
            f"{summary['ece_after']:.4f} after ({summary['bins']} equal-width bins; fitted on {summary['fitted_on']}).",
        ]
    shown = calibration.get("test") or calibration.get("validation")
    if shown:
        out += [
            "",
            "| predicted spam probability | rows | mean predicted (before) | observed (before) | "
            "rows after | mean predicted (after) | observed (after) |",
            "|---|---|---|---|---|---|---|",
        ]
        for b, a in zip(shown["reliability_before"], shown["reliability_after"], strict=True):
            out.append(
                f"| {b['lo']:.1f}-{b['hi']:.1f} | {b['n']} | {_fmt(b['mean_predicted'])} | {_fmt(b['observed'])} | "
                f"{a['n']} | {_fmt(a['mean_predicted'])} | {_fmt(a['observed'])} |"
            )
    return [*out, ""]


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def calibrate_booster(
    booster: Any,
    x_val: np.ndarray | None,
    y_val: Sequence[int] | np.ndarray,
    names: Sequence[str],
    *,
    val_margin: np.ndarray | None = None,
    test: tuple[np.ndarray, Sequence[int] | np.ndarray] | None = None,
) -> tuple[Any, dict[str, Any], Callable[[np.ndarray], np.ndarray]]:
    """Platt scaling fitted on validation rows and folded into `booster` (checked numerically).

    `val_margin`: the margins to fit on when they are not the booster's own predictions of
    `x_val` (out-of-fold margins of a model trained on those very rows). `test`: rows to report
    ECE on that the calibrator never saw. Returns the booster to serve, the calibration summary,
    and the same map on probabilities (for out-of-fold predictions that feed another model)."""
    import xgboost as xgb

    best = booster.attr("best_iteration")
    trees = booster[: int(best) + 1] if best is not None else booster  # the trees that are served
    y = np.asarray(y_val, dtype=np.int64)
    if x_val is None or not enough_to_calibrate(y):
        reason = f"too little validation data ({0 if x_val is None else len(y)} rows)"
        return trees, {"method": "none", "reason": reason}, lambda p: p

    def margin_of(x: np.ndarray) -> np.ndarray:
        return np.asarray(trees.predict(xgb.DMatrix(x, feature_names=list(names)), output_margin=True), np.float64)

    fit_on = margin_of(x_val) if val_margin is None else np.asarray(val_margin, dtype=np.float64)
    a, b = fit_platt(fit_on, y)
    folded = fold_platt(trees, a, b)
    worst = check_fold(trees, folded, x_val, names, a, b)
    parameters = {"a": round(a, 6), "b": round(b, 6)}
    summary: dict[str, Any] = {
        "method": "platt",
        "parameters": parameters,
        "applied": (
            f"folded into the booster (leaf values times a, offset in the first tree; max |p| change {worst:.1e})"
        ),
        "validation": calibration_summary(
            y,
            apply_platt(fit_on, 1.0, 0.0),
            apply_platt(fit_on, a, b),
            method="platt",
            parameters=parameters,
            fitted_on=f"validation split ({len(y)} rows{', out-of-fold' if val_margin is not None else ''})",
        ),
    }
    if test is not None and len(test[1]):
        test_margin = margin_of(test[0])
        summary["test"] = calibration_summary(
            test[1],
            apply_platt(test_margin, 1.0, 0.0),
            apply_platt(test_margin, a, b),
            method="platt",
            parameters=parameters,
            fitted_on=summary["validation"]["fitted_on"],
        )
    return folded, summary, lambda p: apply_platt(prob_to_margin(p), a, b)
