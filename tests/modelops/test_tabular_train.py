from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xgboost as xgb

from contracts.feature_schema import BEHAVIOUR_FEATURES, FUSION_FEATURES, LINK_FEATURES
from modelops.tabular.synthetic import generate
from modelops.tabular.train import (
    cross_fit_predict,
    evaluate,
    explain,
    load_model,
    train_behaviour_model,
    train_fusion_model,
    train_link_model,
    train_model,
)

SPAM = ["WINNER claim your prize now", "Free entry txt WIN to 80086", "URGENT call 0906 to claim cash"]
HAM = ["see you at 7", "running late sorry", "did you get my message", "dinner tonight?", "love you mum"]


@pytest.fixture(scope="module")
def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    texts = (SPAM + HAM) * 40  # 320 rows, 120 spam
    labels = ([1] * len(SPAM) + [0] * len(HAM)) * 40
    return generate(texts, labels, seed=1), generate(texts[:160], labels[:160], seed=2)


def test_link_and_behaviour_models_have_schema_features(frames: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    train, val = frames
    link = train_link_model(train, train["label"], x_val=val, y_val=val["label"])
    behaviour = train_behaviour_model(train, train["label"], x_val=val, y_val=val["label"])
    assert link.feature_names == LINK_FEATURES
    assert behaviour.feature_names == BEHAVIOUR_FEATURES
    assert link.stopping == behaviour.stopping == "validation"
    assert link.booster.num_features() == len(LINK_FEATURES)
    assert behaviour.booster.num_features() == len(BEHAVIOUR_FEATURES)
    assert link.booster.num_boosted_rounds() == link.num_trees
    p = behaviour.predict_proba(val)
    assert p.shape == (len(val),) and ((p >= 0) & (p <= 1)).all()
    metrics = evaluate(val["label"], p)
    assert metrics["f1"] > 0.5  # the synthetic contexts carry signal


def test_rows_may_be_dicts_or_matrices(frames: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    train, _ = frames
    rows = train[list(LINK_FEATURES)].to_dict("records")
    from_dicts = train_link_model(rows, train["label"].tolist(), fixed_rounds=5)
    from_matrix = train_link_model(train[list(LINK_FEATURES)].to_numpy(), train["label"].to_numpy(), fixed_rounds=5)
    np.testing.assert_allclose(from_dicts.predict_proba(rows[:10]), from_matrix.predict_proba(train.head(10)))
    with pytest.raises(KeyError):
        from_dicts.predict_proba([{"url_present": 1.0}])
    with pytest.raises(ValueError, match="columns"):
        from_dicts.predict_proba(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="labels"):
        train_link_model(rows[:3], [0, 1, 2], fixed_rounds=2)


def test_stopping_without_validation_uses_cv_or_fixed_rounds(frames: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    train, _ = frames
    assert train_behaviour_model(train, train["label"]).stopping == "cv"
    tiny = train.head(12)  # e.g. the first reviewer labels
    assert train_behaviour_model(tiny, tiny["label"]).stopping == "fixed"


def _fusion_rows(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    noise = lambda: np.clip(y * 0.6 + rng.normal(0.2, 0.25, n), 0, 1)  # noqa: E731
    rows = pd.DataFrame(
        {
            "text_prob": noise(),
            "preview_prob": np.where(rng.random(n) < 0.5, -1.0, noise()),
            "link_prob": noise(),
            "behaviour_prob": noise(),
            "url_present": rng.integers(0, 2, n).astype(float),
            "report_count": rng.poisson(y * 1.0),
            "user_age_days": rng.lognormal(5 - 2 * y, 1),
            "domain_report_count": rng.poisson(1 + y * 2),
            # Some spam in campaigns of 2-50 posts from as many accounts, ham rarely and small.
            "campaign_size": np.where(rng.random(n) < 0.05 + 0.35 * y, rng.integers(2, 5 + 45 * y), 0),
        }
    )
    rows["campaign_authors"] = np.minimum(rows["campaign_size"], rng.integers(2, 51, n)) * (rows["campaign_size"] > 0)
    return rows, y


def test_fusion_model_is_monotone_in_sub_model_probabilities() -> None:
    rows, y = _fusion_rows(300, 0)
    fusion = train_fusion_model(rows, y)
    assert fusion.feature_names == FUSION_FEATURES
    probe = pd.DataFrame([rows.iloc[0].to_dict()] * 11)
    for name in ("text_prob", "link_prob", "behaviour_prob"):
        varied = probe.copy()
        varied[name] = np.linspace(0, 1, 11)
        scores = fusion.predict_proba(varied)
        assert (np.diff(scores) >= -1e-9).all(), name


def test_fusion_model_is_monotone_in_campaign_size_and_authors() -> None:
    rows, y = _fusion_rows(600, 2)
    fusion = train_fusion_model(rows, y)
    rose = False
    for i in range(10):
        probe = pd.DataFrame([rows.iloc[i].to_dict()] * 11)
        for name in ("campaign_size", "campaign_authors"):
            varied = probe.copy()
            varied[name] = np.linspace(0, 50, 11)
            scores = fusion.predict_proba(varied)
            assert (np.diff(scores) >= -1e-9).all(), (name, i)
            rose = rose or scores[-1] > scores[0] + 1e-6
    assert rose  # the tree reads them: a blast raises some post's score


@pytest.mark.parametrize("kind", ["link", "behaviour"])
def test_contributions_sum_to_margin(kind: str, frames: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    train, val = frames
    model = train_model(kind, train, train["label"], x_val=val, y_val=val["label"])
    explanation = explain(model, val)
    assert explanation.feature_names == model.feature_names
    assert explanation.contributions.shape == (len(val), len(model.feature_names))
    np.testing.assert_allclose(
        explanation.contributions.sum(axis=1) + explanation.bias, model.predict_margin(val), atol=1e-4
    )
    np.testing.assert_allclose(explanation.probability, model.predict_proba(val), atol=1e-5)
    row = explanation.row(0)
    assert set(row) == {*model.feature_names, "bias"}
    top = explanation.top(0, k=3)
    assert len(top) == 3 and abs(top[0][1]) >= abs(top[-1][1])


def test_fusion_contributions_sum_to_margin() -> None:
    rows, y = _fusion_rows(200, 1)
    fusion = train_fusion_model(rows, y)
    e = explain(fusion, rows)
    np.testing.assert_allclose(e.contributions.sum(axis=1) + e.bias, e.margin, atol=1e-4)
    np.testing.assert_allclose(e.margin, fusion.predict_margin(rows), atol=1e-5)


def test_saved_json_keeps_feature_names_and_predictions(
    tmp_path: Path, frames: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    train, val = frames
    model = train_link_model(train, train["label"], x_val=val, y_val=val["label"])
    path = model.save(tmp_path / "link.json")
    raw = xgb.Booster()
    raw.load_model(str(path))
    assert tuple(raw.feature_names or ()) == LINK_FEATURES
    assert raw.num_boosted_rounds() == model.num_trees
    loaded = load_model(path)
    assert loaded.kind == "link" and loaded.feature_names == LINK_FEATURES
    np.testing.assert_allclose(loaded.predict_proba(val), model.predict_proba(val), atol=1e-6)


def test_cross_fit_predicts_only_masked_rows_out_of_fold(frames: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    train, _ = frames
    mask = (train.index % 2 == 0).tolist()
    oof = cross_fit_predict(
        "behaviour", train, train["label"], groups=train["text_index"].tolist(), predict_mask=mask, rounds=10, folds=3
    )
    assert np.isnan(oof[~np.asarray(mask)]).all()
    assert np.isfinite(oof[np.asarray(mask)]).all()


def test_evaluate() -> None:
    m = evaluate([0, 0, 1, 1], [0.1, 0.6, 0.7, 0.4])
    assert (m["tp"], m["fp"], m["fn"], m["tn"]) == (1, 1, 1, 1)
    assert m["precision"] == m["recall"] == m["f1"] == m["accuracy"] == 0.5
    assert 0 < m["pr_auc"] <= 1
