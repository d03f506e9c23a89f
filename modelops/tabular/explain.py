"""Per-feature contributions (XGBoost ``pred_contribs``, i.e. TreeSHAP) for the dashboard's "why".

For every row, ``contributions.sum() + bias == margin`` (the raw log-odds the model outputs
before the sigmoid), so the numbers add up to the score the moderator sees. Positive values
push towards spam. Pure module (numpy + xgboost): the Triton python backend can import it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xgboost as xgb

__all__ = ["Explanation", "as_matrix", "explain_booster"]


def as_matrix(rows: Any, names: Sequence[str]) -> np.ndarray:
    """A float32 matrix with columns in ``names`` order from a DataFrame, a sequence of
    feature mappings, or an array that already has ``len(names)`` columns."""
    names = list(names)
    if hasattr(rows, "columns") and hasattr(rows, "to_numpy"):  # pandas.DataFrame
        missing = [n for n in names if n not in rows.columns]
        if missing:
            raise KeyError(f"missing features: {', '.join(missing)}")
        return np.ascontiguousarray(rows[names].to_numpy(dtype=np.float32))
    if isinstance(rows, np.ndarray):
        matrix = np.ascontiguousarray(rows, dtype=np.float32)
    else:
        seq = list(rows)
        if seq and isinstance(seq[0], Mapping):
            for row in seq:
                missing = [n for n in names if n not in row]
                if missing:
                    raise KeyError(f"missing features: {', '.join(missing)}")
            matrix = np.asarray([[float(row[n]) for n in names] for row in seq], dtype=np.float32)
        else:
            matrix = np.asarray(seq, dtype=np.float32)
    if matrix.ndim == 1 and matrix.size == 0:
        matrix = matrix.reshape(0, len(names))
    if matrix.ndim != 2 or matrix.shape[1] != len(names):
        raise ValueError(f"expected a matrix with {len(names)} columns, got shape {matrix.shape}")
    return matrix


@dataclass(frozen=True)
class Explanation:
    feature_names: tuple[str, ...]
    contributions: np.ndarray  # (rows, features), log-odds
    bias: np.ndarray  # (rows,), the expected margin (base score + tree biases)
    margin: np.ndarray  # (rows,), the model's raw output

    @property
    def probability(self) -> np.ndarray:
        return np.asarray(1.0 / (1.0 + np.exp(-self.margin)))

    def row(self, i: int) -> dict[str, float]:
        """``{feature: contribution, ..., "bias": bias}`` for one row."""
        out = {name: float(v) for name, v in zip(self.feature_names, self.contributions[i], strict=True)}
        out["bias"] = float(self.bias[i])
        return out

    def as_dicts(self) -> list[dict[str, float]]:
        return [self.row(i) for i in range(len(self.margin))]

    def top(self, i: int, k: int = 5) -> list[tuple[str, float]]:
        """The ``k`` features with the largest absolute contribution in row ``i``."""
        order = np.argsort(-np.abs(self.contributions[i]))[:k]
        return [(self.feature_names[j], float(self.contributions[i, j])) for j in order]


def explain_booster(booster: xgb.Booster, rows: Any, feature_names: Sequence[str]) -> Explanation:
    matrix = as_matrix(rows, feature_names)
    dmatrix = xgb.DMatrix(matrix, feature_names=list(feature_names))
    contribs = np.asarray(booster.predict(dmatrix, pred_contribs=True), dtype=np.float64)
    margin = np.asarray(booster.predict(dmatrix, output_margin=True), dtype=np.float64)
    return Explanation(
        feature_names=tuple(feature_names),
        contributions=contribs[:, :-1],
        bias=contribs[:, -1],
        margin=margin,
    )
