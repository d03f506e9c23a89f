"""Which automatic decisions a moderator is asked to confirm: a random share of the posts the
models approve or remove on their own at their first score.

Why. Moderators label what the policy queues, so the labels say nothing about the posts the
models decided alone: how much spam or abuse was approved, how much legitimate content was
removed, on this platform's own content. A small uniform sample of those decisions, labelled
like any other post, estimates both (moderation.selectors.spot_checks) and teaches the models the
kind of post they miss. Only the models' own calls are drawn: a block list, a moderator's
enforcement or a decided campaign are people's rules, not the model's.

The draw is a keyed hash (BLAKE2b keyed with SECRET_KEY) of the post id, uniform in [0, 1):
deterministic (a retried batch draws the same posts) and unpredictable to a platform that does
not hold the key, which could otherwise route its borderline posts around the checks. A pure
function of its inputs and the settings."""

from __future__ import annotations

import hashlib
from functools import cache

from django.conf import settings

from moderation.models import Source

_SCALE = float(1 << 64)


@cache
def _key(secret: str) -> bytes:
    # BLAKE2b takes a key of at most 64 bytes; a longer SECRET_KEY is hashed down to one.
    raw = secret.encode()
    return raw if len(raw) <= 64 else hashlib.blake2b(raw).digest()


def spot_check_draw(post_id: int) -> float:
    """The post's uniform draw in [0, 1): the same for the same id and SECRET_KEY."""
    digest = hashlib.blake2b(str(post_id).encode(), key=_key(settings.SECRET_KEY), digest_size=8).digest()
    return int.from_bytes(digest, "big") / _SCALE


def spot_check_rate(source: Source) -> float:
    """The source's own rate, else settings.SPOT_CHECK_RATE."""
    rate = source.spot_check_rate
    return float(settings.SPOT_CHECK_RATE if rate is None else rate)


def spot_check_selected(post_id: int, source: Source) -> bool:
    """Whether an automatic decision on this post goes to the Spot checks tab."""
    rate = spot_check_rate(source)
    return rate > 0.0 and spot_check_draw(post_id) < rate
