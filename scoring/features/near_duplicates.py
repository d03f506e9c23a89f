"""Near-duplicate text signatures for campaign detection: normalized character shingles, their
MinHash (datasketch) and the LSH band buckets (datasketch's MinHashLSH banding) that make two
posts candidates. Pure functions, no database: scoring.services.campaigns stores the buckets
and decides.

Normalization is what makes a copy with small edits still a copy: lower case, Unicode NFKC, a
URL becomes one placeholder, a run of digits another, punctuation becomes a space. Character
5-grams over the normalized words then survive a swapped or changed word with most shingles
intact, where word n-grams lose every n-gram that touches the edit (benchmarks/campaigns.py
measures both)."""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING

# datasketch imports SciPy at its top level (its LSH module): imported where it is used, so a
# worker that never detects a campaign (beat, the training worker) starts without it.
if TYPE_CHECKING:
    from datasketch import MinHash


SHINGLE_CHARS = 5
# A fixed seed: every process (web, workers, the benchmark) must draw the same permutations, or
# the buckets of posts scored by different processes would never meet.
MINHASH_SEED = 1

_URL = re.compile(r"(?:https?://|www\.)\S+|\b[\w-]+(?:\.[\w-]+)*\.(?:com|net|org|info|biz|co|io|ly|me|uk)\b\S*", re.I)
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


def normalized(text: str) -> str:
    """The text as campaign detection compares it: URLs and numbers as placeholders, no case,
    no punctuation, single spaces."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = _NUMBER.sub(" nnum ", _URL.sub(" uurl ", text))
    return " ".join(_NON_WORD.sub(" ", text).split())


def shingles(text: str, *, k: int = SHINGLE_CHARS) -> set[bytes]:
    """Character k-grams of the normalized text (the whole text when shorter than k)."""
    norm = normalized(text)
    if len(norm) <= k:
        return {norm.encode()} if norm else set()
    return {norm[i : i + k].encode() for i in range(len(norm) - k + 1)}


def jaccard(a: set[bytes], b: set[bytes]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def signature(items: set[bytes], *, num_perm: int) -> MinHash:
    from datasketch import MinHash

    template = _template(num_perm)
    minhash = MinHash(num_perm=num_perm, seed=MINHASH_SEED, permutations=template.permutations, scheme=template.scheme)
    minhash.update_batch(list(items))
    return minhash


@functools.lru_cache(maxsize=4)
def _template(num_perm: int) -> MinHash:
    """A MinHash of the seed, for its permutations: datasketch draws them from the seed for
    every new MinHash, which was a third of campaign detection's CPU (cProfile,
    benchmarks/campaigns.py --db). The same seed gives the same permutations, so passing them
    changes no signature."""
    from datasketch import MinHash

    return MinHash(num_perm=num_perm, seed=MINHASH_SEED)


@functools.lru_cache(maxsize=8)
def band_params(threshold: float, num_perm: int) -> tuple[int, int]:
    """datasketch's (bands, rows) for the threshold: it integrates the false positive and
    negative areas, which costs milliseconds, so once per process and setting."""
    from datasketch import MinHashLSH

    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    return lsh.b, lsh.r


def buckets(signatures: Sequence[MinHash], *, threshold: float, num_perm: int) -> list[list[int]]:
    """Each signature's LSH band buckets as signed 64-bit integers (a PostgreSQL bigint).

    The banding is datasketch's: the signatures go into an in-memory MinHashLSH with the
    threshold's parameters, and its `keys` storage gives back each one's band hashes in band
    order. A band hash is folded with its band number, so equal values in different bands never
    meet."""
    from datasketch import MinHashLSH

    lsh = MinHashLSH(num_perm=num_perm, params=band_params(threshold, num_perm))
    for i, minhash in enumerate(signatures):
        lsh.insert(i, minhash, check_duplication=False)
    result: list[list[int]] = []
    for i in range(len(signatures)):
        band_hashes = lsh.keys.get(i)
        result.append(
            [
                int.from_bytes(
                    hashlib.blake2b(band.to_bytes(2, "big") + bytes(h), digest_size=8).digest(), "big", signed=True
                )
                for band, h in enumerate(band_hashes)
            ]
        )
    return result
