"""The fusion tree's final score against the text score in a neutral context.

Neutral context: the first post of an author the platform sent nothing about (no account age,
friends, e-mail or journey), with no link, no preview and no reports: the feature values
``scoring.features.extract`` computes for such a post. It is the common case on a platform's
first day, and the one where the final score should follow the text score rather than overrule
it. The model card, ``benchmarks/fusion_response.py`` and the tests read the curve from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from contracts.feature_schema import BEHAVIOUR_FEATURES, FUSION_FEATURES, no_link_values

__all__ = ["TEXT_GRID", "neutral_behaviour", "neutral_fusion_rows", "neutral_link", "neutral_response"]

TEXT_GRID: tuple[float, ...] = tuple(round(i / 10, 1) for i in range(11))


def neutral_link() -> dict[str, float]:
    """LINK_FEATURES of a post with no link, no shares or comments and no known IP."""
    values = no_link_values()
    values.update({"post_share_count": 0.0, "post_comment_count": 0.0, "ip_post_count": 0.0, "ip_spam_rate": 0.0})
    return values


def neutral_behaviour() -> dict[str, float]:
    """BEHAVIOUR_FEATURES of an unknown author's first post: only the post itself is counted."""
    values = dict.fromkeys(BEHAVIOUR_FEATURES, 0.0)
    values.update({"user_seen_posts": 1.0, "user_post_count": 1.0})
    return values


def neutral_fusion_rows(text_scores: Sequence[float], *, link_prob: float, behaviour_prob: float) -> np.ndarray:
    """FUSION_FEATURES rows (schema order) for each text score, in the neutral context."""
    fixed = {
        "preview_prob": -1.0,
        "link_prob": link_prob,
        "behaviour_prob": behaviour_prob,
        "url_present": 0.0,
        "report_count": 0.0,
        "user_age_days": 0.0,
        "domain_report_count": 0.0,
        "campaign_size": 0.0,
        "campaign_authors": 0.0,
    }
    return np.array([[t if n == "text_prob" else fixed[n] for n in FUSION_FEATURES] for t in text_scores], np.float32)


def neutral_response(models: dict[str, Any], text_scores: Sequence[float] = TEXT_GRID) -> np.ndarray:
    """The final score per text score in the neutral context: the link and behaviour models
    score the neutral vectors, the fusion tree the row they make (``models``: TrainedModel per
    kind, as the bootstrap returns them)."""
    link_prob = float(models["link"].predict_proba([neutral_link()])[0])
    behaviour_prob = float(models["behaviour"].predict_proba([neutral_behaviour()])[0])
    rows = neutral_fusion_rows(text_scores, link_prob=link_prob, behaviour_prob=behaviour_prob)
    return np.asarray(models["fusion"].predict_proba(rows), dtype=np.float64)
