"""How unfamiliar a post's text is to the text model: far from every text it trained on, or
made of words it never saw.

Two measures of one text, each divided by its threshold, and the larger taken, so 1.0 is the
line (``unfamiliarity >= 1``: unfamiliar):

- neighbour distance: the mean cosine distance of the text's TF-IDF vector (word 1-2 grams
  hashed to N_FEATURES columns, idf fitted on the reference texts) to its ``k`` nearest
  reference texts (scikit-learn ``NearestNeighbors``, brute force over the sparse matrix);
- unknown words: the share of the text's words (single words) whose hashed column no word of a
  reference text has (a text with no word at all counts as wholly unknown).

The terms are hashed as the lexical model's are (modelops/text/baseline.py: HashingVectorizer,
then TfidfTransformer, columns no reference text reached get idf 0, so a text's unseen terms
take no share of its norm, as a vocabulary would drop them). The saved reference holds column
numbers, idf values, the reference rows' weights and the columns the reference texts' words
hash to, never a word: after an adaptation round the reference includes every labelled post's
text (feedback/services/adaptation.py), and a published version keeps none of it for an
author's erasure to miss. Hashing costs little: on the SMS train split 3.5 % of the word 1-2
grams share a column with another, and a word no reference text has lands on a reference word's
column (so counts as known) one time in 160.

The reference is the SMS train split the text model learned from. The thresholds are fitted on
held-out SMS texts so that at most ``max_flagged`` of them (3 %) come out unfamiliar: first the
distance threshold at a quantile of its own, then the unknown-word threshold as the lowest one
that keeps the union within the budget.

Measured on text the model never trained on (benchmarks/familiarity.py): the union flags more
than either measure alone (fortunes 26 % against 13 % and 15 %; Brown sentences, with the
vocabulary of before, 24 % against 12 % and 14 %). Nearest neighbours in a 50-150 dimension
LSA space of the same TF-IDF flagged no more than 4 % of any of them. The served text model
returns no sentence embedding, and a frozen encoder beside it would cost about as much CPU again
as the text model.

Saved as FAMILIARITY_FILE beside the text model and bundled into spam_pipeline, which computes
the same numbers from the same fitted objects (triton_repository/spam_pipeline/model.py,
BundledFamiliarity; tests/modelops/test_familiarity.py holds the two together). A file written
before the terms were hashed holds a TfidfVectorizer with its vocabulary instead; it still
loads and serves (VocabularyTerms), so such a version stays a rollback target."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import joblib
import numpy as np
from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer, TfidfVectorizer
from sklearn.neighbors import NearestNeighbors

FAMILIARITY_FILE = "familiarity.joblib"
NEIGHBOURS = 5
MAX_FLAGGED = 0.03
# The distance threshold's own quantile of the held-out distances; the unknown-word share
# takes what is left of the budget.
DISTANCE_QUANTILE = 0.985
# Hashed columns, as many as the lexical model's (module docstring: collisions).
N_FEATURES = 2**20

__all__ = [
    "FAMILIARITY_FILE",
    "Familiarity",
    "HashedTerms",
    "VocabularyTerms",
    "fit_familiarity",
    "load_familiarity",
    "save_familiarity",
]


def _hasher(ngram_range: tuple[int, int], n_features: int) -> HashingVectorizer:
    # alternate_sign=False, norm=None: raw counts, so TfidfTransformer sees what TfidfVectorizer would.
    return HashingVectorizer(
        ngram_range=ngram_range, lowercase=True, n_features=n_features, alternate_sign=False, norm=None
    )


@dataclass
class HashedTerms:
    """Hashed word 1-2 grams: the TF-IDF rows and the columns of the reference texts' words."""

    hasher: HashingVectorizer  # word 1-2 grams -> counts per column (stateless)
    tfidf: TfidfTransformer  # sublinear tf x idf (0 where no reference text reached), L2 norm
    seen_words: np.ndarray  # sorted columns that some reference text's single words hash to
    _words: HashingVectorizer = field(init=False, repr=False)
    _seen: np.ndarray = field(init=False, repr=False)

    method = "hashed TF-IDF word 1-2 grams"

    def __post_init__(self) -> None:
        n = int(self.hasher.n_features)
        self._words = _hasher((1, 1), n)
        self._seen = np.zeros(n, dtype=np.float64)
        self._seen[self.seen_words] = 1.0

    @classmethod
    def fit(cls, texts: list[str], n_features: int = N_FEATURES) -> HashedTerms:
        hasher = _hasher((1, 2), n_features)
        counts = hasher.transform(texts)
        tfidf = TfidfTransformer(sublinear_tf=True).fit(counts)
        seen = np.zeros(n_features, dtype=bool)
        seen[counts.indices] = True
        tfidf.idf_ = np.where(seen, tfidf.idf_, 0.0)
        seen_words = np.unique(_hasher((1, 1), n_features).transform(texts).indices).astype(np.int32)
        return cls(hasher, tfidf, seen_words)

    def rows(self, texts: list[str]) -> Any:
        return self.tfidf.transform(self.hasher.transform(texts))

    def unknown(self, texts: list[str]) -> np.ndarray:
        counts = self._words.transform(texts)
        words = np.asarray(counts.sum(axis=1), dtype=np.float64).ravel()
        unseen = words - counts @ self._seen  # whole counts: exact in float64
        return np.divide(unseen, words, out=np.ones_like(words), where=words > 0)

    def saved(self) -> dict[str, Any]:
        return {"hasher": self.hasher, "tfidf": self.tfidf, "seen_words": self.seen_words}


@dataclass
class VocabularyTerms:
    """A reference written before the terms were hashed: a TfidfVectorizer whose vocabulary
    holds the reference texts' words. Loaded and served so that such a version can be rolled
    back to; never fitted any more."""

    vectorizer: TfidfVectorizer

    method = "TF-IDF word 1-2 grams"

    def __post_init__(self) -> None:
        self._analyze = self.vectorizer.build_analyzer()
        self._vocabulary = frozenset(w for w in self.vectorizer.vocabulary_ if " " not in w)

    def rows(self, texts: list[str]) -> Any:
        return self.vectorizer.transform(texts)

    def unknown(self, texts: list[str]) -> np.ndarray:
        shares = []
        for text in texts:
            words = [t for t in self._analyze(text) if " " not in t]
            shares.append(sum(w not in self._vocabulary for w in words) / len(words) if words else 1.0)
        return np.asarray(shares, dtype=np.float64)

    def saved(self) -> dict[str, Any]:
        return {"vectorizer": self.vectorizer}


@dataclass
class Familiarity:
    terms: HashedTerms | VocabularyTerms
    neighbours: NearestNeighbors
    reference: Any  # the TF-IDF rows of the reference texts (what neighbours was fitted on)
    k: int
    distance_threshold: float
    unknown_threshold: float
    reference_size: int

    def measures(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(mean distance to the k nearest reference texts, share of unknown words) per text."""
        if not texts:
            return np.zeros(0), np.zeros(0)
        distances, _ = self.neighbours.kneighbors(self.terms.rows(list(texts)), n_neighbors=self.k)
        return np.asarray(distances, dtype=np.float64).mean(axis=1), self.terms.unknown(list(texts))

    def unfamiliarity(self, texts: Sequence[str]) -> np.ndarray:
        """max(distance / its threshold, unknown share / its threshold): >= 1 is unfamiliar."""
        distance, unknown = self.measures(texts)
        return np.maximum(distance / self.distance_threshold, unknown / self.unknown_threshold)

    def describe(self) -> dict[str, Any]:
        return {
            "method": f"{self.terms.method}: mean cosine distance to the k nearest reference texts, "
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
    terms = HashedTerms.fit(list(reference_texts))
    matrix = terms.rows(list(reference_texts))
    neighbours = NearestNeighbors(metric="cosine", algorithm="brute").fit(matrix)
    k = min(k, matrix.shape[0])
    probe = Familiarity(terms, neighbours, matrix, k, 1.0, 1.0, matrix.shape[0])
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
    return Familiarity(terms, neighbours, matrix, k, distance_threshold, unknown_threshold, matrix.shape[0])


def save_familiarity(familiarity: Familiarity, model_dir: Path) -> Path:
    """Plain sklearn objects, arrays and numbers, so spam_pipeline loads them without this module.
    Uncompressed (10 MB for the SMS reference, most of it the 2^20 idf values), so that a search
    of the file's bytes for a word, as the erasure tests do, finds what a pickle holds."""
    path = Path(model_dir) / FAMILIARITY_FILE
    joblib.dump(
        {
            **familiarity.terms.saved(),
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
    terms: HashedTerms | VocabularyTerms
    if "vectorizer" in data:
        terms = VocabularyTerms(data.pop("vectorizer"))
    else:
        terms = HashedTerms(data.pop("hasher"), data.pop("tfidf"), data.pop("seen_words"))
    return Familiarity(terms, **data)
