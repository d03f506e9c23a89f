"""The spot-check figures' arithmetic (moderation.selectors.spot_checks): the Wilson interval is
scipy's, and a share's coverage and possible range follow its counts."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from moderation.selectors.spot_checks import SpotCheckShare, wilson_interval


@pytest.mark.parametrize(("wrong", "checked"), [(0, 1), (0, 40), (1, 2), (3, 50), (25, 50), (50, 50), (7, 900)])
def test_the_wilson_interval_is_scipys(wrong: int, checked: int) -> None:
    expected = binomtest(wrong, checked).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = wilson_interval(wrong, checked)
    assert low == pytest.approx(expected.low, abs=1e-9)
    assert high == pytest.approx(expected.high, abs=1e-9)


def test_nothing_checked_is_no_information() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_coverage_and_the_range_a_provisional_share_can_end_in() -> None:
    share = SpotCheckShare(checked=8, wrong=2, waiting=2)
    assert share.share == 0.25 and share.coverage == 0.8
    assert share.possible == (0.2, 0.4)
    assert SpotCheckShare(checked=0, wrong=0, waiting=0).possible is None
    assert SpotCheckShare(checked=0, wrong=0, waiting=3).coverage == 0.0
