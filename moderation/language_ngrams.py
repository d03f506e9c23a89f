"""Byte n-gram counts of many texts at once, for the language detector (moderation.language).

py3langid counts a text's features (byte n-grams of 1 to 4 bytes) by walking an Aho-Corasick
automaton byte by byte in Python, one text at a time: about 0.03 ms for an SMS-length text,
the largest part of a batch-ingested post's web CPU. No maintained package counts them for a
batch, so this module does it in numpy, for all the texts of a request together: every n-gram
at every position of the concatenated texts (none crossing from one text into the next) is
looked up in a hash table of the model's features. It is written here because py3langid
ships the automaton, not the n-grams; they are recovered from it once per process, by a
breadth-first walk (the shortest path to each state spells the state's string, and a feature
is the string of the shallowest state that emits it).

The counts are exactly py3langid's (`instance2fv`): tests/moderation/test_language.py checks
them on the SMS collection and on texts in a dozen scripts, so a post gets the same language
whichever path detected it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

MAX_ORDER = 4  # py3langid's features are 1- to 4-byte n-grams
_TABLE_BITS = 17  # 131,072 slots for ~7,500 features: probes are short (2 at most today)
_TABLE_MASK = (1 << _TABLE_BITS) - 1
_HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing
# A lookup key is (n << 32) | the n-gram's bytes, big-endian; a counted pair is
# (text << 40) | feature.
_TEXT_SHIFT = 40
_FEATURE_MASK = (1 << _TEXT_SHIFT) - 1


@dataclass(frozen=True)
class BatchCounts:
    """The non-zero feature counts of a batch: row i says text `texts[i]` holds feature
    `features[i]` `counts[i]` times; rows are grouped by text, in text order."""

    texts: np.ndarray
    features: np.ndarray
    counts: np.ndarray
    lengths: np.ndarray  # each text's length in bytes


def _slots(keys: np.ndarray) -> np.ndarray:
    return ((keys.astype(np.uint64) * _HASH_MULTIPLIER) >> np.uint64(64 - _TABLE_BITS)).astype(np.int64)


def _feature_keys(next_move: Any, outputs: dict[int, Sequence[int]], n_features: int) -> np.ndarray:
    """Each feature's key (n << 32 | bytes), recovered from py3langid's automaton."""
    moves = np.frombuffer(next_move, dtype=np.dtype(next_move.typecode)).reshape(-1, 256)
    code = np.full(moves.shape[0], -1, dtype=np.int64)
    depth = np.full(moves.shape[0], -1, dtype=np.int64)
    code[0], depth[0] = 0, 0
    frontier = np.array([0])
    for level in range(1, MAX_ORDER + 1):
        reached = moves[frontier].ravel()
        spelled = ((code[frontier][:, None] << 8) | np.arange(256)[None, :]).ravel()
        new = depth[reached] < 0
        states, first = np.unique(reached[new], return_index=True)
        code[states], depth[states] = spelled[new][first], level
        frontier = states
    order = np.full(n_features, MAX_ORDER + 1, dtype=np.int64)
    ngram = np.zeros(n_features, dtype=np.int64)
    for state, features in outputs.items():
        for feature in features:
            if 0 <= depth[state] < order[feature]:
                order[feature], ngram[feature] = depth[state], code[state]
    if (order > MAX_ORDER).any():
        raise ValueError("the language model has features longer than 4 bytes")
    return (order << 32) | ngram


class NgramCounter:
    """Counts py3langid's features in many texts with a few numpy operations per batch."""

    def __init__(self, identifier: Any) -> None:
        keys = _feature_keys(identifier.tk_nextmove, identifier.tk_output, identifier.nb_numfeats)
        self._keys = np.full(_TABLE_MASK + 1, -1, dtype=np.int64)
        self._features = np.full(_TABLE_MASK + 1, -1, dtype=np.int64)
        self._probes = 0
        for feature, (key, slot) in enumerate(zip(keys.tolist(), _slots(keys).tolist(), strict=True)):
            probe = 0
            while self._keys[slot] != -1:  # linear probing
                slot, probe = (slot + 1) & _TABLE_MASK, probe + 1
            self._keys[slot], self._features[slot] = key, feature
            self._probes = max(self._probes, probe)

    def _lookup(self, keys: np.ndarray) -> np.ndarray:
        """The feature of each key, -1 where it is not a feature."""
        slot = _slots(keys)
        found = np.full(keys.size, -1, dtype=np.int64)
        for _ in range(self._probes + 1):
            match = self._keys[slot] == keys
            found[match] = self._features[slot[match]]
            slot = (slot + 1) & _TABLE_MASK
        return found

    def count(self, texts: Sequence[bytes]) -> BatchCounts:
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        data = np.frombuffer(b"".join(texts), dtype=np.uint8).astype(np.int64)
        owner = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
        room = np.cumsum(lengths)[owner] - np.arange(data.size)  # bytes left in the text
        keys, owners = [], []
        ngram = data
        for order in range(1, MAX_ORDER + 1):
            if order > 1:  # the n-gram starting at each position, one byte longer
                ngram = (ngram[:-1] << 8) | data[order - 1 :]
            inside = room[: ngram.size] >= order
            keys.append((order << 32) | ngram[inside])
            owners.append(owner[: ngram.size][inside])
        all_keys, all_owners = np.concatenate(keys), np.concatenate(owners)
        features = self._lookup(all_keys)
        hit = features >= 0
        pairs = np.sort((all_owners[hit] << _TEXT_SHIFT) | features[hit])
        starts = np.flatnonzero(np.r_[True, pairs[1:] != pairs[:-1]]) if pairs.size else pairs
        counts = np.diff(np.r_[starts, pairs.size])
        unique = pairs[starts]
        return BatchCounts(texts=unique >> _TEXT_SHIFT, features=unique & _FEATURE_MASK, counts=counts, lengths=lengths)
