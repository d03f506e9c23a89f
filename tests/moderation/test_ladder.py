"""The escalation ladder's pure step, table-driven: which rung a set of live strikes reaches."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from moderation.models import LadderAction
from moderation.services.ladder import Rung, ladder_decide

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
LIMIT = Rung(strikes=2, window=30 * DAY, action=LadderAction.LIMIT_RATE, duration=7 * DAY)
SUSPEND = Rung(strikes=3, window=30 * DAY, action=LadderAction.SUSPEND, duration=14 * DAY)
SUSPEND_LONG_WINDOW = Rung(strikes=3, window=90 * DAY, action=LadderAction.SUSPEND)
REACH_AT_3 = Rung(strikes=3, window=30 * DAY, action=LadderAction.LIMIT_REACH)


def ago(*days: float) -> list[datetime]:
    return [NOW - timedelta(days=d) for d in days]


@pytest.mark.parametrize(
    ("rungs", "strikes", "expected"),
    [
        pytest.param([SUSPEND], [], None, id="no strikes"),
        pytest.param([], ago(1, 2, 3), None, id="no rules"),
        pytest.param([SUSPEND], ago(1, 2), None, id="two of three"),
        pytest.param([SUSPEND], ago(0, 1, 2), SUSPEND, id="third strike suspends"),
        pytest.param([SUSPEND], ago(0, 1, 29.9), SUSPEND, id="all three inside the window"),
        pytest.param([SUSPEND], ago(0, 1, 31), None, id="one strike outside the window"),
        pytest.param([SUSPEND_LONG_WINDOW], ago(0, 1, 31), SUSPEND_LONG_WINDOW, id="a longer window counts it"),
        pytest.param([LIMIT, SUSPEND], ago(0, 1), LIMIT, id="second strike limits"),
        pytest.param([LIMIT, SUSPEND], ago(0, 1, 2), SUSPEND, id="third strike climbs past the limit"),
        pytest.param([LIMIT, SUSPEND], ago(0, 1, 2, 3, 4), SUSPEND, id="more strikes stay on the top rung"),
        pytest.param([LIMIT, SUSPEND], ago(0, 40, 50), None, id="old strikes do not add up"),
        pytest.param([REACH_AT_3, SUSPEND], ago(0, 1, 2), SUSPEND, id="same count: the heavier action"),
        pytest.param([SUSPEND], [NOW + DAY, *ago(0, 1)], None, id="a strike after now is not counted"),
    ],
)
def test_ladder_decide(rungs, strikes, expected):
    assert ladder_decide(rungs=rungs, strike_times=strikes, now=NOW) == expected
