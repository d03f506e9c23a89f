"""The adaptation's choice of lexical half and blend weight (modelops.text.adapt)."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pytest
from sklearn.pipeline import Pipeline

from modelops.text.adapt import (
    LEXICAL_WEIGHTS,
    MIN_LABEL_VALIDATION,
    REPLAY_F1_TOLERANCE,
    Example,
    TransformerRows,
    fit_adapted_text,
    served_blend,
)
from modelops.text.baseline import fit_lexical

SPAM = ["win a cash prize now call", "free entry claim your reward text", "urgent you won a voucher claim now"]
HAM = ["see you at lunch later", "can you pick up milk", "running late be there soon"]
INSULTS = ["you are a stupid idiot", "what a moron you are", "shut up you pathetic clown"]
REMARKS = ["great point thanks for sharing", "i agree with the article", "interesting view on the match"]


def _texts(pool: Sequence[str], n: int, rng: random.Random) -> list[str]:
    return [f"{rng.choice(pool)} {rng.choice(pool).split()[-1]} {i}" for i in range(n)]


def _replay(rng: random.Random, n: int) -> list[tuple[str, int]]:
    return [(t, 1) for t in _texts(SPAM, n, rng)] + [(t, 0) for t in _texts(HAM, n, rng)]


def _platform(rng: random.Random, n: int) -> list[tuple[str, int]]:
    return [(t, 1) for t in _texts(INSULTS, n, rng)] + [(t, 0) for t in _texts(REMARKS, n, rng)]


def _sms_only_transformer(texts: Sequence[str]) -> TransformerRows:
    """A transformer that knows SMS spam and nothing else: every insult is ham to it."""
    probs = np.array([0.97 if any(w in t for w in ("prize", "claim", "voucher", "free")) else 0.02 for t in texts])
    return TransformerRows(np.arange(len(texts)), probs, list(texts), len(texts))


@pytest.fixture
def data() -> dict[str, list[tuple[str, int]]]:
    rng = random.Random(7)
    return {
        "replay": _replay(rng, 60),
        "replay_validation": _replay(rng, 20),
        "labels": _platform(rng, 40),
        "label_validation": _platform(rng, 15),
    }


def _train(replay: Sequence[tuple[str, int]], labels: Sequence[tuple[str, int]]) -> list[Example]:
    return [Example(t, y) for t, y in replay] + [Example(t, y, is_label=True) for t, y in labels]


def _served_lexical(replay: Sequence[tuple[str, int]]) -> Pipeline:
    return fit_lexical([t for t, _ in replay], [y for _, y in replay], c=10.0)


def test_where_the_transformer_is_blind_the_labels_carry_the_score(data) -> None:
    train = _train(data["replay"], data["labels"])
    adapted = fit_adapted_text(
        train=train,
        replay_validation=data["replay_validation"],
        label_validation=data["label_validation"],
        transformer=_sms_only_transformer,
        served_lexical=_served_lexical(data["replay"]),
        served_weight=0.5,
    )
    assert adapted.report["from_labels"] is True
    # The transformer calls every insult ham, so the blend leans on the lexical half.
    assert adapted.lexical_weight > 0.5
    labels = data["label_validation"]
    rows = _sms_only_transformer([t for t, _ in labels])
    probs = served_blend(rows, adapted.lexical.predict_proba(rows.texts), adapted.lexical_weight)
    y = np.array([v for _, v in labels])
    assert probs[y == 1].min() > 0.5 > probs[y == 0].max()
    # ... without losing what the bootstrap knew.
    chosen = next(
        c
        for c in adapted.report["candidates"]
        if (c["multiplier"], c["c"], c["weight"])
        == (adapted.label_multiplier, adapted.lexical.c, adapted.lexical_weight)
    )
    assert chosen["replay_f1"] >= adapted.report["replay_f1_reference"] - REPLAY_F1_TOLERANCE


def test_too_few_validation_labels_keep_the_served_weight(data) -> None:
    few = data["label_validation"][: MIN_LABEL_VALIDATION // 2]
    train = _train(data["replay"], data["labels"])
    adapted = fit_adapted_text(
        train=train,
        replay_validation=data["replay_validation"],
        label_validation=few,
        transformer=_sms_only_transformer,
        served_lexical=_served_lexical(data["replay"]),
        served_weight=0.4,
    )
    assert adapted.report["from_labels"] is False
    assert adapted.lexical_weight == 0.4
    assert adapted.label_multiplier == 1.0
    assert {c["weight"] for c in adapted.report["candidates"]} == {0.4}


def test_a_candidate_that_forgets_the_replayed_texts_is_not_chosen(data) -> None:
    """Labels that call SMS spam words harmless: weighting them up would teach the lexical half
    to pass SMS spam; the replay's F1 constraint keeps the choice to the candidates that do not."""
    rng = random.Random(3)
    poisoned = [(t, 0) for t in _texts(SPAM, 40, rng)] + [(t, 1) for t in _texts(INSULTS, 40, rng)]
    validation = [(t, 0) for t in _texts(SPAM, 12, rng)] + [(t, 1) for t in _texts(INSULTS, 12, rng)]
    train = _train(data["replay"], poisoned)
    adapted = fit_adapted_text(
        train=train,
        replay_validation=data["replay_validation"],
        label_validation=validation,
        transformer=_sms_only_transformer,
        served_lexical=_served_lexical(data["replay"]),
        served_weight=0.5,
    )
    dropped = [c for c in adapted.report["candidates"] if c["objective"] is None]
    assert dropped, "some candidate must lose the replay's F1 for this test to mean anything"
    replay_rows = _sms_only_transformer([t for t, _ in data["replay_validation"]])
    replay_probs = served_blend(replay_rows, adapted.lexical.predict_proba(replay_rows.texts), adapted.lexical_weight)
    replay_y = np.array([y for _, y in data["replay_validation"]])
    predicted = replay_probs >= 0.5
    f1 = 2 * (predicted & (replay_y == 1)).sum() / (predicted.sum() + replay_y.sum())
    assert f1 >= adapted.report["replay_f1_reference"] - REPLAY_F1_TOLERANCE


def test_served_blend_takes_the_maximum_over_a_texts_inputs() -> None:
    rows = TransformerRows(np.array([0, 0, 1]), np.array([0.1, 0.9, 0.2]), ["a", "b", "c"], 2)
    out = served_blend(rows, np.array([0.3, 0.1, 0.6]), 0.5)
    assert out.tolist() == pytest.approx([0.5, 0.4])
    assert max(LEXICAL_WEIGHTS) < 1.0  # the transformer always keeps a share


def test_no_validation_label_at_all_keeps_the_served_weight(data) -> None:
    """Labels split by author: a round may have none in the validation split."""
    train = _train(data["replay"], data["labels"])
    adapted = fit_adapted_text(
        train=train,
        replay_validation=data["replay_validation"],
        label_validation=[],
        transformer=_sms_only_transformer,
        served_lexical=_served_lexical(data["replay"]),
        served_weight=0.5,
    )
    assert adapted.report["from_labels"] is False and adapted.lexical_weight == 0.5
