"""The served text score blends the transformer with the lexical model saved beside it
(modelops.text.baseline): offline evaluation and the Triton pipeline compute the same number,
and a text model without a lexical model scores as the transformer alone."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES
from modelops import model_repository
from modelops.model_repository import Artifacts
from modelops.text.baseline import LEXICAL_FILE, blend, load_lexical, save_lexical, train_baseline
from modelops.text.data import load_sms_splits
from modelops.text.inference import OnnxTextClassifier, softmax_spam
from modelops.tiny import cached_tiny_artifacts
from scoring.serving import ScoringInput
from tests.fixtures.triton import TritonTestServer, start_tiny_triton

TEXTS = [
    "URGENT! You have won a 2000 prize. Call 09061701461 to claim now",
    "see you at lunch, I'll bring the notes",
    "Free entry in a weekly competition, text WIN to 80086",
    "qxzv",  # no word the lexical model knows: its intercept alone
    " ".join(f"Line {i} of the meeting notes: review the attached report before Friday." for i in range(10)),
]


def _with_lexical(tmp_path: Path, weight: float = 0.5) -> Path:
    """A copy of the tiny text model with a lexical model fitted on part of the SMS split."""
    text_dir = tmp_path / "text"
    tiny_text = cached_tiny_artifacts().text
    assert tiny_text is not None
    shutil.copytree(tiny_text, text_dir)
    splits = load_sms_splits()
    result = train_baseline(
        splits.train.texts[:600],
        splits.train.labels[:600],
        splits.validation.texts[:200],
        splits.validation.labels[:200],
    )
    save_lexical(result, text_dir)
    serving = json.loads((text_dir / "serving.json").read_text())
    (text_dir / "serving.json").write_text(json.dumps({**serving, "lexical_weight": weight}))
    return text_dir


def test_offline_score_is_the_blend_and_no_lexical_model_means_the_transformer_alone(tmp_path):
    text_dir = _with_lexical(tmp_path)
    classifier = OnnxTextClassifier(text_dir)
    blended = classifier.predict_proba(TEXTS)
    transformer = OnnxTextClassifier(text_dir, lexical_weight=0.0).predict_proba(TEXTS)
    lexical = load_lexical(text_dir)
    assert lexical is not None
    short, long = TEXTS[:4], TEXTS[4]
    # A text that fits: the blend of the two models' scores of the text.
    np.testing.assert_allclose(blended[:4], blend(transformer[:4], lexical.predict_proba(short)[:, 1], 0.5))
    # A long text: each window blended with the lexical score of its own words, then the maximum.
    (windows,) = classifier.windows([long])
    assert len(windows) > 1
    decoded = [classifier.tokenizer.backend_tokenizer.decode(w, skip_special_tokens=True) for w in windows]
    per_window = blend(softmax_spam(classifier.logits_for_ids(windows)), lexical.predict_proba(decoded)[:, 1], 0.5)
    assert blended[4] == pytest.approx(per_window.max(), abs=1e-6)
    assert not np.allclose(blended, transformer)
    (text_dir / LEXICAL_FILE).unlink()
    np.testing.assert_array_equal(OnnxTextClassifier(text_dir).predict_proba(TEXTS), transformer)


@pytest.fixture(scope="module")
def blended_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TritonTestServer, Path]]:
    work = tmp_path_factory.mktemp("lexical")
    text_dir = _with_lexical(work)
    artifacts = Artifacts(text=text_dir, tabular=cached_tiny_artifacts().tabular)
    with start_tiny_triton(work, artifacts=artifacts) as server:
        yield server, text_dir


@pytest.mark.integration
def test_the_pipeline_serves_the_same_blend_as_the_offline_evaluation(blended_server):
    server, text_dir = blended_server
    rows = [
        ScoringInput(
            text=t, preview_text="", link=[0.1] * len(LINK_FEATURES), behaviour=[0.2] * len(BEHAVIOUR_FEATURES)
        )
        for t in TEXTS
    ]
    served = np.asarray([o.text_prob for o in server.client().score(rows)], dtype=np.float64)
    np.testing.assert_allclose(served, OnnxTextClassifier(text_dir).predict_proba(TEXTS), atol=1e-5)
    transformer = OnnxTextClassifier(text_dir, lexical_weight=0.0).predict_proba(TEXTS)
    assert np.abs(served - transformer).max() > 1e-3  # the lexical half is really in it


def _served_lexical() -> type:
    """spam_pipeline's BundledLexical, compiled from its source (the module needs Triton's stub)."""
    import ast
    import math
    from collections import Counter

    source = (model_repository.SOURCE_REPOSITORY / "spam_pipeline" / "model.py").read_text()
    wanted = {"BundledLexical", "_hashed_columns"}
    nodes = [n for n in ast.parse(source).body if getattr(n, "name", None) in wanted]
    namespace: dict[str, Any] = {"json": json, "math": math, "np": np, "Counter": Counter}
    exec(compile(ast.Module(body=nodes, type_ignores=[]), "spam_pipeline/model.py", "exec"), namespace)  # noqa: S102
    return namespace["BundledLexical"]


def _vocabulary_pipeline(texts: list[str], labels: list[int]) -> Pipeline:
    """A lexical model as published before the terms were hashed (a rollback target)."""
    return Pipeline(
        [
            ("tfidf", TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, lowercase=True)),
            ("lr", LogisticRegression(C=10.0, solver="liblinear")),
        ]
    ).fit(texts, labels)


def test_the_served_lexical_score_is_predict_proba_for_hashed_and_vocabulary_models(tmp_path):
    splits = load_sms_splits()
    texts, labels = list(splits.train.texts[:600]), list(splits.train.labels[:600])
    hashed = train_baseline(texts, labels, splits.validation.texts[:200], splits.validation.labels[:200]).pipeline
    probe = [*TEXTS, *splits.test.texts[:50], "", "zzzq unseenword"]
    bundled = _served_lexical()
    for pipeline in (hashed, _vocabulary_pipeline(texts, labels)):
        (tmp_path / "serving.json").write_text(json.dumps({"lexical_weight": 0.5}))
        joblib.dump(pipeline, tmp_path / LEXICAL_FILE)
        served = bundled(tmp_path).probs([t.encode() for t in probe])
        np.testing.assert_allclose(served, pipeline.predict_proba(probe)[:, 1], rtol=0, atol=1e-12)


def test_a_saved_lexical_model_holds_no_word_of_its_training_texts(tmp_path):
    """The terms are hashed: a token that only one training text holds (a phone number, a name)
    is nowhere in the saved file. The vocabulary model of before kept it (the control)."""
    splits = load_sms_splits()
    token = "zorblaxphone0771234"
    texts = [*splits.train.texts[:400], f"call {token} now for your prize"]
    labels = [*splits.train.labels[:400], 1]
    result = train_baseline(texts, labels, splits.validation.texts[:100], splits.validation.labels[:100])
    save_lexical(result, tmp_path)
    assert token.encode() not in (tmp_path / LEXICAL_FILE).read_bytes()
    joblib.dump(_vocabulary_pipeline(texts, labels), tmp_path / "vocabulary.joblib")
    assert token.encode() in (tmp_path / "vocabulary.joblib").read_bytes()
