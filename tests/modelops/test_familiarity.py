"""The familiarity measure: calibrated on held-out SMS, high on text unlike the reference, and
served by spam_pipeline as the same numbers."""

from __future__ import annotations

import ast
import math
from collections import Counter
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.neighbors import NearestNeighbors

from modelops import model_repository
from modelops.text.data import load_sms_splits
from modelops.text.familiarity import (
    FAMILIARITY_FILE,
    MAX_FLAGGED,
    Familiarity,
    VocabularyTerms,
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
    wanted = {"BundledFamiliarity", "_hashed_columns"}
    nodes = [n for n in ast.parse(source).body if getattr(n, "name", None) in wanted]
    namespace: dict[str, Any] = {"np": np, "Counter": Counter, "math": math}
    exec(compile(ast.Module(body=nodes, type_ignores=[]), "spam_pipeline/model.py", "exec"), namespace)  # noqa: S102
    return namespace["BundledFamiliarity"]


def test_the_pipeline_serves_the_offline_numbers(fitted: tuple[Familiarity, list[str], list[str]], tmp_path: Path):
    familiarity, _, held_out = fitted
    texts = [*held_out[:40], *PROSE, "", "zqxv", "zqxv wrrpt ok"]
    served_class = _served_familiarity()
    assert (served_class(tmp_path)([t.encode() for t in texts]) == -1.0).all()  # no reference published
    save_familiarity(familiarity, tmp_path)
    served = served_class(tmp_path)([t.encode() for t in texts])
    np.testing.assert_allclose(served, familiarity.unfamiliarity(texts), rtol=1e-6)


def test_the_saved_reference_holds_no_word_of_its_texts(tmp_path: Path) -> None:
    """The terms are hashed: a token that only one reference text holds (a phone number, a
    name) is nowhere in the saved file, yet it is a known word. The vocabulary reference of
    before kept it (the control)."""
    token = "zorblaxphone0771234"
    splits = load_sms_splits()
    reference = [*splits.train.texts[:400], f"call {token} now for your prize"]
    familiarity = fit_familiarity(reference, splits.test.texts[:200])
    save_familiarity(familiarity, tmp_path)
    assert token.encode() not in (tmp_path / FAMILIARITY_FILE).read_bytes()
    _, unknown = familiarity.measures([token, "zorblaxphone0779999"])
    assert unknown.tolist() == [0.0, 1.0]
    _save_vocabulary_reference(familiarity, reference, tmp_path / "vocabulary")
    assert token.encode() in (tmp_path / "vocabulary" / FAMILIARITY_FILE).read_bytes()


def _save_vocabulary_reference(thresholds: Familiarity, reference: list[str], folder: Path) -> TfidfVectorizer:
    """familiarity.joblib as it was written before the terms were hashed, with `thresholds`'
    numbers."""
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, lowercase=True)
    matrix = vectorizer.fit_transform(reference)
    folder.mkdir(exist_ok=True)
    joblib.dump(
        {
            "vectorizer": vectorizer,
            "neighbours": NearestNeighbors(metric="cosine", algorithm="brute").fit(matrix),
            "reference": matrix,
            "k": thresholds.k,
            "distance_threshold": thresholds.distance_threshold,
            "unknown_threshold": thresholds.unknown_threshold,
            "reference_size": matrix.shape[0],
        },
        folder / FAMILIARITY_FILE,
    )
    return vectorizer


def test_a_vocabulary_reference_still_loads_and_serves(
    fitted: tuple[Familiarity, list[str], list[str]], tmp_path: Path
) -> None:
    """A version published before the terms were hashed stays a rollback target: offline and
    served give the numbers its vocabulary gives."""
    familiarity, reference, held_out = fitted
    vectorizer = _save_vocabulary_reference(familiarity, reference, tmp_path)
    loaded = load_familiarity(tmp_path)
    assert loaded is not None and isinstance(loaded.terms, VocabularyTerms)
    texts = [*held_out[:40], *PROSE, "", "zqxv", "zqxv wrrpt ok"]
    distance, unknown = loaded.measures(texts)
    expected, _ = loaded.neighbours.kneighbors(vectorizer.transform(texts), n_neighbors=familiarity.k)
    np.testing.assert_allclose(distance, expected.mean(axis=1))
    assert unknown[-3:].tolist() == [1.0, 1.0, 2 / 3]
    served = _served_familiarity()(tmp_path)([t.encode() for t in texts])
    np.testing.assert_allclose(served, loaded.unfamiliarity(texts), rtol=1e-6)
    (tmp_path / "again").mkdir()
    save_familiarity(loaded, tmp_path / "again")  # written back in its own form
    assert "vectorizer" in joblib.load(tmp_path / "again" / FAMILIARITY_FILE)
