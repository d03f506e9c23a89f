"""How unfamiliar a post's text is to the text model: far from every text it trained on, or
made of words it never saw.

Two measures of one text, each divided by its threshold, and the larger taken, so 1.0 is the
line (``unfamiliarity >= 1``: unfamiliar):

- neighbour distance: the mean cosine distance of the text's TF-IDF vector (word 1-2 grams,
  fitted on the reference texts) to its ``k`` nearest reference texts (scikit-learn
  ``NearestNeighbors``, brute force over the sparse matrix);
- unknown words: the share of the text's words that no reference text contains (a text with no
  word at all counts as wholly unknown).

The reference is the SMS train split the text model learned from. The thresholds are fitted on
held-out SMS texts so that at most ``max_flagged`` of them (3 %) come out unfamiliar: first the
distance threshold at a quantile of its own, then the unknown-word threshold as the lowest one
that keeps the union within the budget.

Measured on text the model never trained on (benchmarks/familiarity.py): the union flags more
than either measure alone (fortunes 23 % against 10 % and 16 %, Brown sentences 24 % against
12 % and 14 %). Nearest neighbours in a 50-150 dimension LSA space of the same TF-IDF flagged
no more than 4 % of any of them. The served text model returns no sentence embedding, and a
frozen encoder beside it would cost about as much CPU again as the text model.

Saved as FAMILIARITY_FILE beside the text model and bundled into spam_pipeline, which computes
the same numbers from the same fitted objects (triton_repository/spam_pipeline/model.py,
BundledFamiliarity; tests/modelops/test_familiarity.py holds the two together)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import joblib
import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.neighbors import NearestNeighbors

FAMILIARITY_FILE = "familiarity.joblib"
NEIGHBOURS = 5
MAX_FLAGGED = 0.03
# The distance threshold's own quantile of the held-out distances; the unknown-word share
# takes what is left of the budget.
DISTANCE_QUANTILE = 0.985

__all__ = [
    "FAMILIARITY_FILE",
    "Familiarity",
    "fit_familiarity",
    "load_familiarity",
    "save_familiarity",
]


def _unknown_share(words: list[str], vocabulary: frozenset[str]) -> float:
    if not words:
        return 1.0
    return sum(w not in vocabulary for w in words) / len(words)


@dataclass
class Familiarity:
    vectorizer: TfidfVectorizer
    neighbours: NearestNeighbors
    reference: Any  # the TF-IDF rows of the reference texts (what neighbours was fitted on)
    k: int
    distance_threshold: float
    unknown_threshold: float
    reference_size: int

    def __post_init__(self) -> None:
        self._analyze = self.vectorizer.build_analyzer()
        self._vocabulary = frozenset(w for w in self.vectorizer.vocabulary_ if " " not in w)

    def _words(self, text: str) -> list[str]:
        return [t for t in self._analyze(text) if " " not in t]

    def measures(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(mean distance to the k nearest reference texts, share of unknown words) per text."""
        if not texts:
            return np.zeros(0), np.zeros(0)
        distances, _ = self.neighbours.kneighbors(self.vectorizer.transform(list(texts)), n_neighbors=self.k)
        unknown = np.array([_unknown_share(self._words(t), self._vocabulary) for t in texts], dtype=np.float64)
        return np.asarray(distances, dtype=np.float64).mean(axis=1), unknown

    def unfamiliarity(self, texts: Sequence[str]) -> np.ndarray:
        """max(distance / its threshold, unknown share / its threshold): >= 1 is unfamiliar."""
        distance, unknown = self.measures(texts)
        return np.maximum(distance / self.distance_threshold, unknown / self.unknown_threshold)

    def describe(self) -> dict[str, Any]:
        return {
            "method": "TF-IDF word 1-2 grams: mean cosine distance to the k nearest reference texts, "
            "or the share of words no reference text has",
            "k": self.k,
            "reference_texts": self.reference_size,
            "distance_threshold": round(self.distance_threshold, 6),
            "unknown_threshold": round(self.unknown_threshold, 6),
        }


def fit_familiarity(
    reference_texts: Sequence[str],
    held_out_texts: Sequence[str],
    *,
    k: int = NEIGHBOURS,
    max_flagged: float = MAX_FLAGGED,
    distance_quantile: float = DISTANCE_QUANTILE,
) -> Familiarity:
    """The reference index and both thresholds (module docstring), so that at most
    ``max_flagged`` of ``held_out_texts`` have unfamiliarity >= 1."""
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, lowercase=True)
    matrix = vectorizer.fit_transform(list(reference_texts))
    neighbours = NearestNeighbors(metric="cosine", algorithm="brute").fit(matrix)
    k = min(k, matrix.shape[0])
    probe = Familiarity(vectorizer, neighbours, matrix, k, 1.0, 1.0, matrix.shape[0])
    distance, unknown = probe.measures(held_out_texts)
    # Thresholds sit just above a held-out value, so ">= 1" flags exactly the values above it.
    distance_threshold = float(np.nextafter(np.quantile(distance, distance_quantile, method="higher"), np.inf))
    far = distance >= distance_threshold
    budget = int(np.floor(max_flagged * len(unknown)))
    unknown_threshold = float(np.nextafter(1.0, np.inf))  # nothing but all-unknown texts flagged
    for candidate in np.unique(unknown):
        threshold = float(np.nextafter(candidate, np.inf))
        if int((far | (unknown >= threshold)).sum()) <= budget:
            unknown_threshold = threshold
            break
    return Familiarity(vectorizer, neighbours, matrix, k, distance_threshold, unknown_threshold, matrix.shape[0])


def save_familiarity(familiarity: Familiarity, model_dir: Path) -> Path:
    """Plain sklearn objects and numbers, so spam_pipeline loads them without this module."""
    path = Path(model_dir) / FAMILIARITY_FILE
    joblib.dump(
        {
            "vectorizer": familiarity.vectorizer,
            "neighbours": familiarity.neighbours,
            "reference": familiarity.reference,
            "k": familiarity.k,
            "distance_threshold": familiarity.distance_threshold,
            "unknown_threshold": familiarity.unknown_threshold,
            "reference_size": familiarity.reference_size,
        },
        path,
    )
    return path


def load_familiarity(model_dir: Path) -> Familiarity | None:
    """The text model's familiarity reference, None when it has none. A joblib pickle: only files
    this project's own training wrote are loaded, from the artifact directory."""
    path = Path(model_dir) / FAMILIARITY_FILE
    if not path.is_file():
        return None
    data = joblib.load(path)
    return Familiarity(**data)
