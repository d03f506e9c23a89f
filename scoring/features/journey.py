"""Features of the poster's journey: the UI steps taken to post (bots are efficient:
docs/design.md).

A journey is what the platform sends with a post, ordered as it happened::

    [{"step": "open_composer", "at": "2026-11-21T10:00:00Z"},
     {"step": "type", "at": "2026-11-21T10:00:04.2Z"},
     {"step": "submit", "at": "2026-11-21T10:00:09Z"}]

Step names are free text from the platform; they are matched case-insensitively by keyword:

- composing: contains ``compose``, ``type``, ``typing``, ``key``, ``input``, ``edit``, ``write``
  or ``focus`` (``open_composer``, ``keypress``, ``focus_textarea`` ...)
- paste: contains ``paste``
- submit: contains ``submit``, ``send``, ``publish``, or is ``post``/``share``

Known bot-like sequences (``journey_bot_pattern`` is 1 when any matches):

- ``submit_without_compose``: a submit step with no composing or paste step before it (a
  direct API call dressed as a journey; humans open a composer and type).
- ``paste_submit_fast``: a paste followed by a submit less than ``PASTE_SUBMIT_FAST_S`` (1 s)
  later, with no typing in between (copy-paste campaign scripts).
- ``fixed_intervals``: at least ``FIXED_INTERVAL_MIN_STEPS`` steps whose gaps are all equal
  within ``FIXED_INTERVAL_TOLERANCE_S`` (10 ms): a timer, not a hand.
- ``superhuman_rate``: at least 3 steps at more than ``SUPERHUMAN_STEPS_PER_SECOND`` steps/s.

An empty journey (the platform sent none) gives all-zero features: "unknown", not "bot".
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "BOT_PATTERNS",
    "JOURNEY_FEATURES",
    "JourneyError",
    "journey_bot_patterns",
    "journey_features",
]

JOURNEY_FEATURES: tuple[str, ...] = (
    "journey_step_count",
    "journey_seconds",
    "journey_steps_per_second",
    "journey_bot_pattern",
    "journey_paste",
)
BOT_PATTERNS: tuple[str, ...] = (
    "submit_without_compose",
    "paste_submit_fast",
    "fixed_intervals",
    "superhuman_rate",
)

PASTE_SUBMIT_FAST_S = 1.0
FIXED_INTERVAL_MIN_STEPS = 4
FIXED_INTERVAL_TOLERANCE_S = 0.010
SUPERHUMAN_STEPS_PER_SECOND = 20.0
MAX_STEPS_PER_SECOND = 100.0  # cap so that simultaneous timestamps do not give infinity
_MIN_SECONDS = 0.01

_COMPOSE_KEYWORDS = ("compose", "type", "typing", "key", "input", "edit", "write", "focus")
_SUBMIT_KEYWORDS = ("submit", "send", "publish")
_SUBMIT_EXACT = frozenset({"post", "share"})


class JourneyError(ValueError):
    """A journey step is malformed (no step name, unreadable timestamp)."""


def _kind(name: str) -> str:
    n = name.strip().lower()
    if "paste" in n:
        return "paste"
    if any(k in n for k in _SUBMIT_KEYWORDS) or n in _SUBMIT_EXACT:
        return "submit"
    if any(k in n for k in _COMPOSE_KEYWORDS):
        return "compose"
    return "other"


def _parse_at(value: Any) -> datetime:
    if isinstance(value, datetime):
        at = value
    elif isinstance(value, str):
        try:
            at = datetime.fromisoformat(value.strip())
        except ValueError as exc:
            raise JourneyError(f"unreadable step time: {value!r}") from exc
    else:
        raise JourneyError(f"step time must be an ISO 8601 string, got {type(value).__name__}")
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)  # naive means UTC


def _parse(steps: Sequence[Mapping[str, Any]]) -> list[tuple[str, datetime]]:
    parsed: list[tuple[str, datetime]] = []
    for i, step in enumerate(steps):
        if not isinstance(step, Mapping):
            raise JourneyError(f"step {i} is not an object")
        name = step.get("step")
        if not isinstance(name, str) or not name.strip():
            raise JourneyError(f"step {i} has no step name")
        parsed.append((_kind(name), _parse_at(step.get("at"))))
    # Platforms send steps in order; a stable sort by time keeps that order for equal times.
    parsed.sort(key=lambda s: s[1])
    return parsed


def _seconds(parsed: list[tuple[str, datetime]]) -> float:
    return (parsed[-1][1] - parsed[0][1]).total_seconds() if len(parsed) > 1 else 0.0


def _rate(count: int, seconds: float) -> float:
    if count < 2:
        return 0.0
    return min(count / max(seconds, _MIN_SECONDS), MAX_STEPS_PER_SECOND)


def _patterns(parsed: list[tuple[str, datetime]]) -> list[str]:
    found: list[str] = []
    kinds = [k for k, _ in parsed]
    if "submit" in kinds:
        first_submit = kinds.index("submit")
        if not any(k in ("compose", "paste") for k in kinds[:first_submit]):
            found.append("submit_without_compose")
    last_paste: datetime | None = None
    for kind, at in parsed:
        if kind == "paste":
            last_paste = at
        elif kind == "compose" and last_paste is not None:
            last_paste = None  # typed after pasting: a person editing
        elif kind == "submit" and last_paste is not None and (at - last_paste).total_seconds() < PASTE_SUBMIT_FAST_S:
            found.append("paste_submit_fast")
            break
    if len(parsed) >= FIXED_INTERVAL_MIN_STEPS:
        gaps = [(b[1] - a[1]).total_seconds() for a, b in itertools.pairwise(parsed)]
        if max(gaps) - min(gaps) <= FIXED_INTERVAL_TOLERANCE_S:
            found.append("fixed_intervals")
    if len(parsed) >= 3 and _rate(len(parsed), _seconds(parsed)) > SUPERHUMAN_STEPS_PER_SECOND:
        found.append("superhuman_rate")
    return found


def journey_bot_patterns(steps: Sequence[Mapping[str, Any]]) -> list[str]:
    """Names (from ``BOT_PATTERNS``) of the bot-like sequences found in the journey."""
    return _patterns(_parse(steps)) if steps else []


def journey_features(steps: Sequence[Mapping[str, Any]] | None) -> dict[str, float]:
    """The journey part of BEHAVIOUR_FEATURES (names in ``JOURNEY_FEATURES``)."""
    if not steps:
        return dict.fromkeys(JOURNEY_FEATURES, 0.0)
    parsed = _parse(steps)
    seconds = _seconds(parsed)
    return {
        "journey_step_count": float(len(parsed)),
        "journey_seconds": seconds,
        "journey_steps_per_second": _rate(len(parsed), seconds),
        "journey_bot_pattern": float(bool(_patterns(parsed))),
        "journey_paste": float(any(k == "paste" for k, _ in parsed)),
    }
