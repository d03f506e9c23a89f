"""Long texts: a text longer than max_length tokens is scored on windows from its head to its
tail, taking the maximum (modelops.text.inference.text_windows, and its copy in
triton_repository/spam_pipeline/model.py). A text that fits is scored exactly as before."""

from __future__ import annotations

import ast
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES
from modelops import model_repository
from modelops.text.inference import OnnxTextClassifier, text_windows
from scoring.serving import ScoringInput

CLS, SEP = 101, 102


def _served_text_windows() -> Callable[..., Any]:
    """spam_pipeline's copy, compiled from its source (the module itself needs Triton's stub)."""
    source = (model_repository.SOURCE_REPOSITORY / "spam_pipeline" / "model.py").read_text()
    (node,) = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "text_windows"]
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module(body=[node], type_ignores=[]), "spam_pipeline/model.py", "exec"), namespace)  # noqa: S102
    return namespace["text_windows"]


def _ids(content_tokens: int) -> list[int]:
    return [CLS, *range(1000, 1000 + content_tokens), SEP]


def test_a_text_that_fits_is_its_own_single_input():
    for n in (0, 1, 126):
        assert text_windows(_ids(n), 128, 4) == [_ids(n)]


def test_the_first_window_is_the_truncated_head_and_the_last_the_tail():
    ids = _ids(1000)
    windows = text_windows(ids, 128, 4)
    assert len(windows) == 4
    assert all(len(w) == 128 and w[0] == CLS and w[-1] == SEP for w in windows)
    assert windows[0] == [*ids[:127], SEP]  # what truncation at 128 gives
    assert windows[-1] == [CLS, *ids[-127:]]
    assert text_windows(ids, 128, 1) == [windows[0]]  # max_windows 1: the head only


def test_a_text_just_over_the_limit_gets_head_and_tail_not_more_windows_than_it_needs():
    windows = text_windows(_ids(200), 128, 8)
    assert len(windows) == 2  # 200 content tokens need two windows of 126
    covered = {t for w in windows for t in w[1:-1]}
    assert covered == set(range(1000, 1200))


def test_the_served_copy_is_the_same_function():
    served = _served_text_windows()
    rng = random.Random(7)
    for _ in range(300):
        ids = _ids(rng.randint(0, 900))
        max_length, max_windows = rng.choice([16, 32, 128]), rng.randint(1, 9)
        assert served(ids, max_length, max_windows) == text_windows(ids, max_length, max_windows)


def _row(text: str) -> ScoringInput:
    return ScoringInput(
        text=text, preview_text="", link=[0.1] * len(LINK_FEATURES), behaviour=[0.2] * len(BEHAVIOUR_FEATURES)
    )


@pytest.mark.integration
def test_served_long_text_path_equals_the_short_path_on_short_texts_and_the_offline_windows_on_long(
    triton_server, settings
):
    """The tiny test server's pipeline is published with windows on (settings.TEXT_MAX_WINDOWS);
    its max_length is 32 tokens, so a few sentences are a long text."""
    text_dir = triton_server.artifacts.text
    served_windows = model_repository._read_serving(  # what publish bundled for the pipeline
        next(triton_server.repository.glob("spam_pipeline/*/tokenizer"))
    )["max_windows"]
    assert isinstance(served_windows, int)
    assert served_windows == settings.TEXT_MAX_WINDOWS > 1
    head_only = OnnxTextClassifier(text_dir, max_windows=1)
    windowed = OnnxTextClassifier(text_dir, max_windows=int(served_windows))
    short = ["win a prize now", "see you at lunch", "URGENT call 09061701461 to claim your reward"]
    long = [
        " ".join(f"Meeting notes line {i}: the quarterly report is attached, please review it." for i in range(12)),
        "Hi team, " * 40 + "WINNER!! claim your free cash prize now, call 09061701461",
    ]
    assert all(len(head_only.encode([t])[0]) < head_only.max_length for t in short)
    assert all(len(windowed.windows([t])[0]) > 1 for t in long)
    outputs = triton_server.client().score([_row(t) for t in short + long])
    served = np.asarray([o.text_prob for o in outputs], dtype=np.float64)
    np.testing.assert_allclose(served[: len(short)], head_only.predict_proba(short), atol=1e-5)
    np.testing.assert_allclose(served[: len(short)], windowed.predict_proba(short), atol=1e-5)
    np.testing.assert_allclose(served[len(short) :], windowed.predict_proba(long), atol=1e-5)
