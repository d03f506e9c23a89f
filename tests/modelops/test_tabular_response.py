"""The fusion tree follows an uncertain text score in a neutral context instead of overruling
it, and never moves against the direction its constraints document."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from contracts.feature_schema import FUSION_FEATURES
from modelops.tabular.bootstrap import BootstrapConfig, BootstrapResult, run_bootstrap
from modelops.tabular.response import neutral_fusion_rows, neutral_response
from modelops.tabular.synthetic import generate
from modelops.tabular.text_probs import TfidfTextProbabilities
from modelops.tabular.train import MONOTONE
from modelops.tabular.uncertain_text import uncertain_text_rows
from modelops.text.data import TextSplit, load_sms_splits

FINE_GRID = tuple(round(float(v), 3) for v in np.linspace(0.0, 1.0, 41))


def _take(split: TextSplit, spam: int, ham: int) -> TextSplit:
    rows = [r for r in zip(split.texts, split.labels, strict=True) if r[1] == 1][:spam]
    rows += [r for r in zip(split.texts, split.labels, strict=True) if r[1] == 0][:ham]
    return TextSplit([t for t, _ in rows], [y for _, y in rows])


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> BootstrapResult:
    full = load_sms_splits()
    train, test = _take(full.train, 80, 320), _take(full.test, 20, 60)
    validation = full.validation  # the fusion's training rows: the real split's size
    return run_bootstrap(
        train=train,
        validation=validation,
        test=test,
        text_probabilities=TfidfTextProbabilities(train.texts, train.labels),
        out_root=Path(tmp_path_factory.mktemp("tabular")),
        config=BootstrapConfig(seed=3, contexts_per_text=1, cross_fit_folds=3),
        version="v",
        log=lambda _: None,
    )


def test_neutral_context_final_score_rises_with_the_text_score(bootstrap: BootstrapResult) -> None:
    curve = neutral_response(bootstrap.models, FINE_GRID)
    assert (np.diff(curve) >= -1e-6).all()
    assert curve[-1] > curve[0] + 0.5


def test_an_uncertain_text_score_is_not_crushed_in_a_neutral_context(bootstrap: BootstrapResult) -> None:
    at = dict(zip(FINE_GRID, neutral_response(bootstrap.models, FINE_GRID), strict=True))
    # Half the text score at least where the text model leans to spam, and no step: every
    # tenth of text score between 0.3 and 0.9 moves the final score.
    assert at[0.7] >= 0.5 * 0.7
    assert at[0.5] >= 0.5 * 0.5
    for low, high in ((0.3, 0.5), (0.5, 0.7), (0.7, 0.9)):
        assert at[high] > at[low], (low, high)


@pytest.mark.parametrize("name", [n for n, d in MONOTONE["fusion"].items() if d])
def test_final_score_moves_only_in_the_documented_direction(bootstrap: BootstrapResult, name: str) -> None:
    direction = MONOTONE["fusion"][name]
    fusion = bootstrap.models["fusion"]
    rng = np.random.default_rng(0)
    base = neutral_fusion_rows(rng.uniform(0, 1, 25).tolist(), link_prob=0.3, behaviour_prob=0.3)
    column = FUSION_FEATURES.index(name)
    top = 1.0 if name.endswith("_prob") else 400.0
    for row in base:
        probe = np.repeat(row[None, :], 30, axis=0)
        probe[:, column] = np.linspace(0.0, top, 30)
        steps = np.diff(fusion.predict_proba(pd.DataFrame(probe, columns=list(FUSION_FEATURES))))
        assert (direction * steps >= -1e-6).all(), name


def test_quiet_newcomers_are_as_common_among_spammers_as_among_everyone() -> None:
    full = load_sms_splits()
    frame = generate(full.train.texts, full.train.labels, seed=5)
    quiet = frame["archetype"] == "quiet_newcomer"
    spam_share, ham_share = quiet[frame.label == 1].mean(), quiet[frame.label == 0].mean()
    assert spam_share > 0.15 and ham_share > 0.15
    assert abs(spam_share - ham_share) < 0.05
    no_profile = quiet & (frame["user_age_days"] == 0)
    assert no_profile[frame.label == 1].any() and no_profile[frame.label == 0].any()
    assert (frame.loc[no_profile, ["user_friends", "user_followers", "user_posts"]] == 0).all().all()


def test_uncertain_text_rows_carry_labels_at_the_rate_of_their_text_score() -> None:
    rows = pd.DataFrame({"text_prob": [0.01] * 50 + [0.99] * 50, "link_prob": [0.1] * 50 + [0.9] * 50})
    labels = np.array([0] * 50 + [1] * 50)
    out = uncertain_text_rows(rows, labels, np.arange(100), seed=1, share=40.0)
    assert len(out.rows) == 4000
    bins = np.digitize(out.rows["text_prob"], [0.25, 0.5, 0.75])
    rates = [out.labels[bins == b].mean() for b in range(4)]
    assert rates == sorted(rates) and rates[0] < 0.25 and rates[-1] > 0.75
    # The context is copied from a real row of the drawn label.
    assert ((out.rows["link_prob"] == 0.9) == (out.labels == 1)).all()
    assert ((out.groups >= 50) == (out.labels == 1)).all()
