from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from contracts.feature_schema import BEHAVIOUR_FEATURES, FUSION_FEATURES, LINK_FEATURES, NO_LINK_VALUES
from modelops.tabular.synthetic import (
    ARCHETYPES,
    FEATURE_COLUMNS,
    LINK_KINDS,
    META_COLUMNS,
    describe_distributions,
    extract_url,
    generate,
)

TEXTS = [
    "WINNER!! Claim your prize at www.getzed.co.uk now",
    "Free ringtones txt TONE to 87121",
    "URGENT call 09061701461 to claim your cash",
    "Are we still on for dinner tonight?",
    "ok see you at 7",
    "Did you watch the match yesterday",
    "I'll be late, traffic is awful",
    "Happy birthday!! have a great day",
] * 10
LABELS = [1, 1, 1, 0, 0, 0, 0, 0] * 10


def test_generate_is_deterministic() -> None:
    a = generate(TEXTS, LABELS, seed=3, contexts_per_text=2)
    b = generate(TEXTS, LABELS, seed=3, contexts_per_text=2)
    pd.testing.assert_frame_equal(a, b)
    c = generate(TEXTS, LABELS, seed=4, contexts_per_text=2)
    assert not a[list(FEATURE_COLUMNS)].equals(c[list(FEATURE_COLUMNS)])


def test_schema_columns_match_feature_schema() -> None:
    frame = generate(TEXTS, LABELS, seed=1)
    assert list(frame.columns) == [*META_COLUMNS, *FEATURE_COLUMNS]
    assert set(FEATURE_COLUMNS) == set(LINK_FEATURES) | set(BEHAVIOUR_FEATURES)
    assert list(frame[list(LINK_FEATURES)].columns) == list(LINK_FEATURES)
    assert list(frame[list(BEHAVIOUR_FEATURES)].columns) == list(BEHAVIOUR_FEATURES)
    fusion_raw = [n for n in FUSION_FEATURES if not n.endswith("_prob")]
    assert set(fusion_raw) <= set(frame.columns)
    assert len(frame) == len(TEXTS)
    assert (frame["label"].to_numpy() == np.asarray(LABELS)).all()
    assert frame[list(FEATURE_COLUMNS)].notna().all().all()
    assert np.isfinite(frame[list(FEATURE_COLUMNS)].to_numpy()).all()


def test_link_less_rows_use_no_link_values_and_linked_rows_have_urls() -> None:
    frame = generate(TEXTS, LABELS, seed=2, contexts_per_text=3)
    no_link = frame[frame["url_present"] == 0]
    linked = frame[frame["url_present"] == 1]
    assert len(no_link) and len(linked)
    for name, value in NO_LINK_VALUES.items():
        assert (no_link[name] == value).all(), name
    assert (no_link["user_link_count"] == 0).all()
    assert (linked["url"].str.startswith("http")).all()
    assert (no_link["preview_index"] == -1).all()
    assert (frame["preview_index"] < len(TEXTS)).all()


def test_url_in_text_is_used() -> None:
    frame = generate(TEXTS, LABELS, seed=5)
    assert (frame.loc[frame["text_index"] % 8 == 0, "url"] == "http://www.getzed.co.uk/").all()


def test_distributions_differ_by_label_but_overlap() -> None:
    frame = generate(TEXTS * 5, LABELS * 5, seed=11)
    spam, ham = frame[frame.label == 1], frame[frame.label == 0]
    assert spam["user_age_days"].median() < ham["user_age_days"].median()
    assert spam["journey_bot_pattern"].mean() > ham["journey_bot_pattern"].mean()
    assert spam["url_present"].mean() > ham["url_present"].mean()
    # overlap: some ham rows look like bots, some spam rows have old accounts
    assert (ham["journey_bot_pattern"] == 1).any()
    assert (spam["user_age_days"] > 365).any()


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("Visit www.getzed.co.uk.", "http://www.getzed.co.uk/"),
        ("go to http://alto18.co.uk/wave/wave.asp?o=44345 now", "http://alto18.co.uk/wave/wave.asp?o=44345"),
        ("Txt250.com for info", "http://txt250.com/"),
        ("no link here, see you at 5.30", None),
        ("http://tms. widelive.com/index", "http://widelive.com/index"),
    ],
)
def test_extract_url(text: str, url: str | None) -> None:
    assert extract_url(text) == url


def test_distributions_are_documented() -> None:
    described = describe_distributions()
    assert len(described["archetypes"]) == len(ARCHETYPES)
    assert len(described["link_kinds"]) == len(LINK_KINDS)
    for label in (0, 1):
        assert sum(a.weight for a in ARCHETYPES if a.label == label) == pytest.approx(1.0)
    assert sum(k.spam_weight for k in LINK_KINDS) == pytest.approx(1.0)
    assert sum(k.ham_weight for k in LINK_KINDS) == pytest.approx(1.0)
    for a in ARCHETYPES:
        assert sum(a.email_p) == pytest.approx(1.0)
