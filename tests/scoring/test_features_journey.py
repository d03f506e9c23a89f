from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.feature_schema import BEHAVIOUR_FEATURES
from scoring.features.journey import JOURNEY_FEATURES, JourneyError, journey_bot_patterns, journey_features

T0 = datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)


def journey(*steps: tuple[str, float]) -> list[dict[str, Any]]:
    return [{"step": name, "at": (T0 + timedelta(seconds=s)).isoformat().replace("+00:00", "Z")} for name, s in steps]


HUMAN = journey(("open_composer", 0), ("focus_textarea", 1.3), ("type", 4.7), ("type", 11.2), ("submit", 14.9))


def test_human_journey() -> None:
    f = journey_features(HUMAN)
    assert set(f) == set(JOURNEY_FEATURES)
    assert set(JOURNEY_FEATURES) <= set(BEHAVIOUR_FEATURES)
    assert f["journey_step_count"] == 5
    assert f["journey_seconds"] == pytest.approx(14.9)
    assert f["journey_steps_per_second"] == pytest.approx(5 / 14.9)
    assert f["journey_bot_pattern"] == 0.0
    assert f["journey_paste"] == 0.0
    assert journey_bot_patterns(HUMAN) == []


@pytest.mark.parametrize(
    ("steps", "pattern"),
    [
        (journey(("submit", 0)), "submit_without_compose"),
        (journey(("page_view", 0), ("submit", 3.0)), "submit_without_compose"),
        (journey(("open_composer", 0), ("paste", 2.0), ("submit", 2.4)), "paste_submit_fast"),
        (journey(("open_composer", 0), ("type", 1), ("click", 2), ("type", 3), ("submit", 4)), "fixed_intervals"),
        (journey(("open_composer", 0), ("type", 0.01), ("type", 0.02), ("submit", 0.05)), "superhuman_rate"),
    ],
)
def test_bot_patterns(steps: list[dict[str, Any]], pattern: str) -> None:
    assert pattern in journey_bot_patterns(steps)
    assert journey_features(steps)["journey_bot_pattern"] == 1.0


def test_paste_then_typing_then_submit_is_human() -> None:
    steps = journey(("open_composer", 0), ("paste", 2.0), ("type", 2.3), ("submit", 2.8))
    assert "paste_submit_fast" not in journey_bot_patterns(steps)
    assert journey_features(steps)["journey_paste"] == 1.0


def test_slow_paste_submit_is_not_flagged() -> None:
    steps = journey(("open_composer", 0), ("paste", 2.0), ("submit", 5.5))
    assert journey_bot_patterns(steps) == []


def test_empty_journey_is_unknown_not_bot() -> None:
    assert journey_features([]) == dict.fromkeys(JOURNEY_FEATURES, 0.0)
    assert journey_features(None) == dict.fromkeys(JOURNEY_FEATURES, 0.0)


def test_naive_and_offset_times_and_unsorted_input() -> None:
    steps = [
        {"step": "submit", "at": "2026-11-21T11:00:10+01:00"},
        {"step": "open_composer", "at": "2026-11-21T10:00:00"},
    ]
    f = journey_features(steps)
    assert f["journey_seconds"] == pytest.approx(10.0)
    assert f["journey_bot_pattern"] == 0.0


def test_simultaneous_steps_rate_is_capped() -> None:
    steps = journey(("open_composer", 0), ("type", 0), ("submit", 0))
    assert journey_features(steps)["journey_steps_per_second"] == 100.0


@pytest.mark.parametrize(
    "steps",
    [[{"step": "x"}], [{"at": "2026-11-21T10:00:00Z"}], [{"step": "x", "at": "yesterday"}], ["submit"]],
)
def test_malformed_steps(steps: list[Any]) -> None:
    with pytest.raises(JourneyError):
        journey_features(steps)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["open_composer", "type", "paste", "submit", "scroll"]), st.floats(0, 600)),
        min_size=1,
        max_size=15,
    )
)
def test_features_are_finite_and_bounded(raw: list[tuple[str, float]]) -> None:
    f = journey_features(journey(*raw))
    assert f["journey_step_count"] == len(raw)
    assert 0 <= f["journey_seconds"] <= 600
    assert 0 <= f["journey_steps_per_second"] <= 100
    assert f["journey_bot_pattern"] in (0.0, 1.0)
