"""Broader cold-start data for the text model, and the measurements that keep it honest.

`mix_benign` adds legitimate writing of many kinds (modelops.text.benign_corpora) to the SMS
training and validation splits, and the same number of SMS spam messages placed inside benign
writing (`benign_corpora.in_context`). The test split stays the SMS test split, so the served
F1 is comparable with every earlier model.

`benign_report` measures whether a model learned the style of its corpora instead of spam, per
held-out corpus and per scorer
(transformer, lexical half, served blend): the share of legitimate texts at or above 0.5 and
at or above the remove threshold, and the recall of SMS test spam placed inside held-out writing
of each kind. A model that learned "prose is legitimate" instead of "this is an offer" shows
itself there as a drop in that recall.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from modelops.text.benign_corpora import BenignSplits, in_context, load_benign_splits
from modelops.text.data import SmsSplits, TextSplit, load_sms_splits

Scorer = Callable[[Sequence[str]], np.ndarray]


def _mixed(split: TextSplit, benign: dict[str, list[str]], seed: int) -> TextSplit:
    ham = [text for texts in benign.values() for text in texts]
    if not ham:
        return split
    spam = [t for t, label in zip(split.texts, split.labels, strict=True) if label == 1]
    placed = in_context(spam, ham, seed)
    texts = [*split.texts, *ham, *placed]
    labels = [*split.labels, *([0] * len(ham)), *([1] * len(placed))]
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    return TextSplit([texts[i] for i in order], [labels[i] for i in order])


def mix_benign(splits: SmsSplits, benign: BenignSplits, seed: int = 42) -> SmsSplits:
    """SMS train/validation plus benign writing (ham) and spam in context (spam); test unchanged."""
    used = ", ".join(sorted(benign.train)) or "none"
    return replace(
        splits,
        train=_mixed(splits.train, benign.train, seed),
        validation=_mixed(splits.validation, benign.validation, seed + 1),
        source=f"{splits.source} + benign writing ({used}) + SMS spam placed in that writing",
    )


def bootstrap_text_splits(
    names: Sequence[str], cache_dir: Path, seed: int = 42, *, download: bool = True
) -> tuple[SmsSplits, dict[str, str]]:
    """What the bootstrap text model trains on: the SMS splits mixed with the named benign
    corpora (the SMS splits alone when none are named), and the corpora left out with why.
    Retraining replays the same mix from the cache the bootstrap filled (download=False: a
    training worker never fetches), so a retrained model keeps what the bootstrap learned
    about other kinds of writing."""
    sms = load_sms_splits(seed=seed)
    if not names:
        return sms, {}
    benign = load_benign_splits(cache_dir, list(names), seed=seed, download=download)
    return mix_benign(sms, benign, seed=seed), benign.missing


def _rates(probs: np.ndarray, remove_threshold: float) -> dict[str, float]:
    return {
        "at_or_above_0.5": round(float((probs >= 0.5).mean()), 4) if len(probs) else 0.0,
        "at_or_above_remove": round(float((probs >= remove_threshold).mean()), 4) if len(probs) else 0.0,
    }


def benign_report(
    scorers: dict[str, Scorer],
    benign: BenignSplits,
    test_spam: Sequence[str],
    *,
    remove_threshold: float,
    seed: int = 7,
) -> dict[str, object]:
    """Per held-out corpus and scorer: false positives (legitimate texts scored at or above 0.5
    and the remove threshold) and the recall of SMS test spam placed in that corpus's writing."""
    report: dict[str, object] = {"remove_threshold": remove_threshold, "corpora": {}}
    corpora: dict[str, object] = {}
    for name, texts in benign.held_out.items():
        placed = in_context(list(test_spam), texts, seed) if texts else []
        row: dict[str, object] = {"legitimate": len(texts), "spam_in_context": len(placed)}
        for scorer_name, score in scorers.items():
            probs = np.asarray(score(texts), dtype=np.float64) if texts else np.zeros(0)
            spam_probs = np.asarray(score(placed), dtype=np.float64) if placed else np.zeros(0)
            row[scorer_name] = {
                "false_positive": _rates(probs, remove_threshold),
                "spam_in_context_recall_at_0.5": round(float((spam_probs >= 0.5).mean()), 4) if len(placed) else 0.0,
            }
        corpora[name] = row
    report["corpora"] = corpora
    return report
