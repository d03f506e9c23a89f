"""Fusion training rows that teach the tree what an uncertain text score means.

The text model is calibrated (temperature scaling, ``modelops.calibration``): a text score t
says the text is spam with probability t. On the SMS validation split the fusion tree trains
on, that model is almost always sure: nearly every score is under 0.1 or over 0.9. With no
rows in between, a tree puts its text split anywhere in the gap, and a post from elsewhere
whose text scored 0.5-0.8 ends up on one side of a step (a final score of 0.03 or 0.78) however
uncertain its text was.

These rows fill the gap with what calibration promises: a text score t drawn uniformly, the
row's label spam with probability t, and the social context of a real training row of that
label (its cross-fitted link/behaviour probabilities and raw signals). Where context is
neutral the tree then learns P(spam) close to t, and where context is telling it learns how
far the context moves t, because context and text are drawn independently given the label.
Rows near 0 and 1 are still dominated by the real SMS rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["UNCERTAIN_TEXT_SHARE", "UncertainTextRows", "uncertain_text_rows"]

# Uncertain-text rows per real fusion training row.
UNCERTAIN_TEXT_SHARE = 1.0


@dataclass(frozen=True)
class UncertainTextRows:
    rows: pd.DataFrame  # fusion features
    labels: np.ndarray
    groups: np.ndarray  # the text whose context each row copies (cross-fitting folds by text)


def uncertain_text_rows(
    rows: pd.DataFrame,
    labels: np.ndarray,
    groups: np.ndarray,
    *,
    seed: int,
    share: float = UNCERTAIN_TEXT_SHARE,
) -> UncertainTextRows:
    """``share * len(rows)`` rows: ``text_prob`` ~ U(0, 1), label ~ Bernoulli(text_prob), every
    other fusion feature copied from a random row of ``rows`` with that label."""
    y = np.asarray(labels, dtype=np.int64).reshape(-1)
    by_label = {label: np.flatnonzero(y == label) for label in (0, 1)}
    if not len(by_label[0]) or not len(by_label[1]):
        raise ValueError("uncertain text rows need rows of both labels")
    rng = np.random.default_rng(seed)
    count = round(share * len(rows))
    text = rng.uniform(0.0, 1.0, count)
    drawn = (rng.uniform(0.0, 1.0, count) < text).astype(np.int64)
    source = np.array([by_label[int(label)][rng.integers(len(by_label[int(label)]))] for label in drawn], dtype=np.intp)
    out = rows.iloc[source].reset_index(drop=True).copy()
    out["text_prob"] = text
    return UncertainTextRows(rows=out, labels=drawn, groups=np.asarray(groups)[source])
