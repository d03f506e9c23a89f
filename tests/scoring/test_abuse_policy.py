"""The abuse rule as a table: it only ever makes an action stricter."""

from __future__ import annotations

import pytest

from moderation.models import Source
from scoring.models import Action
from scoring.services.abuse_policy import AbuseThresholds, abuse_decide, abuse_thresholds

T = AbuseThresholds(queue=0.5, remove=0.9)


@pytest.mark.parametrize(
    ("action", "abuse", "expected", "why"),
    [
        (Action.APPROVE, None, Action.APPROVE, ""),  # no abuse model served
        (Action.APPROVE, 0.49, Action.APPROVE, ""),
        (Action.APPROVE, 0.5, Action.QUEUE, "abuse 0.500 >= queue 0.500"),
        (Action.APPROVE, 0.95, Action.REMOVE, "abuse 0.950 >= remove 0.900"),
        (Action.QUEUE, 0.6, Action.QUEUE, ""),  # already held: nothing to add
        (Action.QUEUE, 0.9, Action.REMOVE, "abuse 0.900 >= remove 0.900"),
        (Action.REMOVE, 0.0, Action.REMOVE, ""),  # never lenient
        (Action.REMOVE, 0.7, Action.REMOVE, ""),
    ],
)
def test_abuse_decide(action, abuse, expected, why):
    assert abuse_decide(action, abuse, T) == (expected, why)


def test_thresholds_come_from_the_source_else_the_settings(settings):
    settings.ABUSE_QUEUE_THRESHOLD, settings.ABUSE_REMOVE_THRESHOLD = 0.4, 0.97
    assert abuse_thresholds(Source(name="a", slug="a")) == AbuseThresholds(queue=0.4, remove=0.97)
    own = Source(name="b", slug="b", abuse_queue_threshold=0.3, abuse_remove_threshold=0.8)
    assert abuse_thresholds(own) == AbuseThresholds(queue=0.3, remove=0.8)
