"""The familiarity measure: calibrated on held-out SMS, high on text unlike the reference, and
served by spam_pipeline as the same numbers."""

from __future__ import annotations

import ast
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from modelops import model_repository
from modelops.text.data import load_sms_splits
from modelops.text.familiarity import (
    FAMILIARITY_FILE,
    MAX_FLAGGED,
    Familiarity,
    fit_familiarity,
    load_familiarity,
    save_familiarity,
)

PROSE = [
    "The committee reviewed the quarterly procurement framework and recommended amendments to clause four.",
    "Photosynthesis converts light energy into chemical energy stored in glucose molecules within chloroplasts.",
    "Mitochondrial oxidative phosphorylation generates adenosine triphosphate via chemiosmotic gradients.",
]


@pytest.fixture(scope="module")
def fitted() -> tuple[Familiarity, list[str], list[str]]:
    splits = load_sms_splits()
    reference, held_out = splits.train.texts[:1500], splits.test.texts
    return fit_familiarity(reference, held_out), reference, held_out


def test_at_most_the_budget_of_held_out_texts_is_flagged(fitted: tuple[Familiarity, list[str], list[str]]) -> None:
    familiarity, _, held_out = fitted
    flagged = familiarity.unfamiliarity(held_out) >= 1.0
    assert 0 < flagged.sum() <= int(MAX_FLAGGED * len(held_out))


def test_reference_texts_are_familiar_and_unlike_text_is_not(fitted: tuple[Familiarity, list[str], list[str]]) -> None:
    familiarity, reference, _ = fitted
    assert (familiarity.unfamiliarity(reference[:200]) < 1.0).mean() > 0.99
    assert (familiarity.unfamiliarity(PROSE) >= 1.0).all()
    _, unknown = familiarity.measures(["zqxv wrrpt", ""])
    assert (unknown == 1.0).all()  # no known word (or none at all) is wholly unknown
    assert (familiarity.unfamiliarity(["zqxv wrrpt", ""]) >= 1.0).all()


def test_saved_reference_gives_the_same_numbers(fitted: tuple[Familiarity, list[str], list[str]], tmp_path: Path):
    familiarity, _, held_out = fitted
    path = save_familiarity(familiarity, tmp_path)
    assert path.name == FAMILIARITY_FILE
    loaded = load_familiarity(tmp_path)
    assert loaded is not None
    np.testing.assert_array_equal(loaded.unfamiliarity(held_out[:50]), familiarity.unfamiliarity(held_out[:50]))
    assert load_familiarity(tmp_path / "missing") is None


def _served_familiarity() -> Any:
    """spam_pipeline's BundledFamiliarity, compiled from its source (the module needs Triton's stub)."""
    source = (model_repository.SOURCE_REPOSITORY / "spam_pipeline" / "model.py").read_text()
    (node,) = [n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "BundledFamiliarity"]
    namespace: dict[str, Any] = {"np": np, "Counter": Counter, "math": math}
    exec(compile(ast.Module(body=[node], type_ignores=[]), "spam_pipeline/model.py", "exec"), namespace)  # noqa: S102
    return namespace["BundledFamiliarity"]


def test_the_pipeline_serves_the_offline_numbers(fitted: tuple[Familiarity, list[str], list[str]], tmp_path: Path):
    familiarity, _, held_out = fitted
    texts = [*held_out[:40], *PROSE, "", "zqxv"]
    served_class = _served_familiarity()
    assert (served_class(tmp_path)([t.encode() for t in texts]) == -1.0).all()  # no reference published
    save_familiarity(familiarity, tmp_path)
    served = served_class(tmp_path)([t.encode() for t in texts])
    np.testing.assert_allclose(served, familiarity.unfamiliarity(texts), rtol=1e-6)
