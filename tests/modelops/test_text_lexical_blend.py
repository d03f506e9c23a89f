"""The served text score blends the transformer with the lexical model saved beside it
(modelops.text.baseline): offline evaluation and the Triton pipeline compute the same number,
and a text model without a lexical model scores as the transformer alone."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES
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
