"""The text cascade on a real Triton (triton_repository/spam_pipeline/model.py, TextCascade): a
familiar text the lexical half decides skips text_classifier and scores its lexical
probability, an uncertain or unfamiliar one runs it, and the decisions agree with the cascade
turned off (the TEXT_CASCADE config parameter) on the texts the bounds were fitted on.

The tiny text model's transformer is random, so its lexical weight here is 0.9: with the SMS
model's 0.5 a random transformer moves almost every blend across a threshold and the fitted
bounds would let nothing skip. For the same reason its halves disagree on texts of every
familiarity, and the fitted familiarity limit is lifted to 1 (only unfamiliar texts run the
transformer); the bounds on the lexical probability are the fitted ones."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES
from modelops.model_repository import Artifacts
from modelops.text.baseline import save_lexical, train_baseline
from modelops.text.cascade import (
    cascade_text_probs,
    decision_bucket,
    fit_for_model,
    read_bounds,
    window_scores,
    write_bounds,
)
from modelops.text.data import load_sms_splits
from modelops.text.familiarity import fit_familiarity, save_familiarity
from modelops.text.inference import OnnxTextClassifier
from modelops.tiny import cached_tiny_artifacts
from scoring.serving import ScoringInput
from scoring.triton_types import ScoringOutput
from tests.fixtures.triton import TritonTestServer, start_tiny_triton

pytestmark = pytest.mark.integration

UNFAMILIAR = "zorblax quintessimo flurbing vexadrine glomtrap snuzzlewick"
SAMPLE = 120  # validation texts scored both ways


def _row(text: str) -> ScoringInput:
    return ScoringInput(
        text=text, preview_text="", link=[0.1] * len(LINK_FEATURES), behaviour=[0.2] * len(BEHAVIOUR_FEATURES)
    )


@pytest.fixture(scope="module")
def text_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny text model with a lexical model (weight 0.9), a familiarity reference and
    cascade bounds fitted on the validation split, as the bootstrap builds them."""
    work = tmp_path_factory.mktemp("cascade")
    tiny = cached_tiny_artifacts()
    assert tiny.text is not None
    text_dir = work / "text"
    shutil.copytree(tiny.text, text_dir)
    splits = load_sms_splits()
    save_lexical(
        train_baseline(
            splits.train.texts[:1500],
            splits.train.labels[:1500],
            splits.validation.texts[:300],
            splits.validation.labels[:300],
        ),
        text_dir,
    )
    save_familiarity(fit_familiarity(splits.train.texts, splits.test.texts), text_dir)
    serving = json.loads((text_dir / "serving.json").read_text())
    (text_dir / "serving.json").write_text(json.dumps({**serving, "lexical_weight": 0.9}))
    write_bounds(text_dir, dataclasses.replace(fit_for_model(text_dir, splits.validation.texts), max_unfamiliarity=1.0))
    return text_dir


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, text_dir: Path) -> Iterator[TritonTestServer]:
    tiny = cached_tiny_artifacts()
    with start_tiny_triton(
        tmp_path_factory.mktemp("cascade-server"), artifacts=Artifacts(text=text_dir, tabular=tiny.tabular)
    ) as private:
        yield private


def _reload(server: TritonTestServer, cascade: str) -> None:
    """spam_pipeline with TEXT_CASCADE `cascade` and no score cache (so every classified text
    reaches text_classifier's statistics)."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(server.grpc_url)
    config: dict[str, Any] = client.get_model_config("spam_pipeline", as_json=True)["config"]
    config["parameters"]["TEXT_CASCADE"] = {"string_value": cascade}
    config["parameters"]["TEXT_CACHE_SIZE"] = {"string_value": "0"}
    client.load_model("spam_pipeline", config=json.dumps(config), client_timeout=120)


def _classified(server: TritonTestServer) -> int:
    return sum(int(s.get("inference_count", 0)) for s in server.client().statistics("text_classifier"))


def _score(server: TritonTestServer, texts: list[str]) -> tuple[list[ScoringOutput], int]:
    """Outputs, and the rows text_classifier ran for them."""
    before = _classified(server)
    outputs: list[ScoringOutput] = []
    for start in range(0, len(texts), 16):
        outputs.extend(server.client().score([_row(t) for t in texts[start : start + 16]]))
    return outputs, _classified(server) - before


def _offline(text_dir: Path, texts: list[str], unfamiliarity: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """What the rule says of `texts` (modelops.text.cascade): (text score, skipped, windows
    classified), from every window's transformer and lexical probability computed offline."""
    classifier = OnnxTextClassifier(text_dir)
    owners, transformer, lexical = window_scores(classifier, texts)
    bounds = read_bounds(text_dir)
    probs, skip = cascade_text_probs(
        owners, transformer, lexical, unfamiliarity, bounds, weight=classifier.lexical_weight
    )
    return probs, skip, int((~skip[owners]).sum())


def test_obvious_texts_skip_uncertain_and_unfamiliar_ones_do_not(server, text_dir):
    _reload(server, "on")
    texts = load_sms_splits().validation.texts[:SAMPLE]
    measured, _ = _score(server, texts)
    unfamiliarity = np.array([o.unfamiliarity for o in measured])
    probs, skip, _ = _offline(text_dir, texts, unfamiliarity)
    obvious = next(t for t, s in zip(texts, skip, strict=True) if s)
    uncertain = next(t for t, s, u in zip(texts, skip, unfamiliarity, strict=True) if not s and u < 1)
    [out], ran = _score(server, [obvious])
    assert out.text_model_skipped and ran == 0
    # A skipped text scores its lexical probability (the maximum over its windows).
    assert out.text_prob == pytest.approx(float(probs[texts.index(obvious)]), abs=1e-6)
    [out], ran = _score(server, [uncertain])
    assert not out.text_model_skipped and ran >= 1
    # An unfamiliar text is never decided by the lexical half, however confident it is.
    _, would_skip, _ = _offline(text_dir, [UNFAMILIAR], np.zeros(1))
    assert would_skip.all()
    [out], ran = _score(server, [UNFAMILIAR])
    assert out.unfamiliarity is not None and out.unfamiliarity >= 1
    assert not out.text_model_skipped and ran >= 1


def test_the_cascade_keeps_every_decision_of_the_texts_it_was_fitted_on(server, text_dir):
    texts = load_sms_splits().validation.texts[:SAMPLE]
    _reload(server, "off")
    off, ran_off = _score(server, texts)
    _reload(server, "on")
    on, ran_on = _score(server, texts)
    skipped = np.array([o.text_model_skipped for o in on])
    assert not any(o.text_model_skipped for o in off)
    assert 0 < skipped.sum() < len(texts)
    # The served rule is the offline one.
    unfamiliarity = np.array([o.unfamiliarity for o in on])
    expected, expected_skip, classified = _offline(text_dir, texts, unfamiliarity)
    assert skipped.tolist() == expected_skip.tolist()
    assert ran_on == classified < ran_off
    on_probs = np.array([o.text_prob for o in on])
    off_probs = np.array([o.text_prob for o in off])
    np.testing.assert_allclose(on_probs, expected, atol=1e-5)
    # A text the cascade let through scores exactly as with the cascade off.
    np.testing.assert_array_equal(on_probs[~skipped], off_probs[~skipped])
    buckets = {"approve": 0.2, "remove": 0.9}
    np.testing.assert_array_equal(decision_bucket(on_probs, **buckets), decision_bucket(off_probs, **buckets))
