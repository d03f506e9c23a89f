"""The client's float32 outputs become short decimals that are still the same float32 values."""

from __future__ import annotations

import json
import math

import numpy as np

from scoring.triton_client import float32_decimals


def _significant_digits(value: float) -> int:
    mantissa = repr(value).lstrip("-").split("e")[0].replace(".", "").lstrip("0")
    return len(mantissa.rstrip("0")) if mantissa else 0


def test_every_float32_survives_and_prints_in_nine_digits_at_most():
    rng = np.random.default_rng(7)
    magnitudes = 10.0 ** rng.uniform(-13, 7.9, size=20_000)
    values = (magnitudes * rng.choice([-1.0, 1.0], size=magnitudes.size)).astype(np.float32)
    out = float32_decimals(values.reshape(200, 100))
    flat = [v for row in out for v in row]
    assert np.array_equal(np.asarray(flat, dtype=np.float32), values)  # bit for bit
    assert max(_significant_digits(v) for v in flat) <= 9
    # Printing them is what the scoring worker pays for: the naive doubles print ~17 digits.
    assert len(json.dumps(flat)) < 0.75 * len(json.dumps([float(v) for v in values]))


def test_zeros_extremes_and_non_finite_values_pass_through():
    values = np.asarray([0.0, -0.0, 1e-30, -3e-20, 3e9, -1e30, np.inf, -np.inf, np.nan], dtype=np.float32)
    out = float32_decimals(values)
    assert [np.float32(v) for v in out[:-1]] == list(values[:-1])
    assert math.copysign(1.0, out[1]) == -1.0
    assert math.isnan(out[-1])
