"""A post's language, detected at ingest with py3langid (langid.py's naive Bayes over byte
n-grams; its model ships inside the wheel, so it works offline and loads in well under a second).

The answer is an ISO 639-1 code, or "und" (undetermined) when the text is empty or the
detector is not confident: SMS-style English ("Ok lar... Joking wif u oni") often reads as
nothing in particular, and "und" never routes a post anywhere (scoring.services.policy).

Three settings keep a post's cost low and English false alarms near zero
(benchmarks/language_cost.py measures both):
- LANGUAGE_CANDIDATES: the detector chooses among these languages only. Over all 97 of its
  languages, probability spreads over look-alikes (es/gl/ca, zh/ja/ko) and short texts land
  on the rare ones.
- LANGUAGE_MIN_CONFIDENCE: below it the answer is "und", except for a language the text model
  was not validated on (TEXT_VALIDATED_LANGUAGES), whose bar is LANGUAGE_UNVALIDATED_MIN_CONFIDENCE:
  "und" never routes, so a short Spanish post read as "und" could be auto-approved, while an
  English post read as "de" only costs a review.
- LANGUAGE_MAX_CHARS: only the head of the text is read; the detector walks the text byte by
  byte in Python, and a few hundred characters decide a language as well as ten thousand.

Why the scoring is written here: py3langid 0.2.2 (the last release that installs beside the
numpy<2 the Triton client needs; 0.3 and later declare numpy>=2) scores raw n-gram counts, so
its softmax is near 1.0 for any short text: 2.8 % of the English SMS collection came out as
fr/nl/it/sv... at confidence >= 0.7. Its 0.4 release scores log(1 + count) and divides by the
square root of the text's length in bytes before the softmax, which keeps short texts honest.
`_Model.classify` is that scoring on 0.2.2's model and feature extractor. At the defaults (0.6,
and 0.4 for unvalidated languages): 27 of the collection's 4,533 English SMS texts are called
another language (de 10, tr 5, id 4, fr 4, it 2, es 1, pt 1; 1 with one bar of 0.6 for all), and
of 200 Faker sentences (random words of the language) per language it finds es 188, fr 184,
de 191, it 176, nl 184, pl 197, ru 200, uk 192, ar 198, zh 200, ja 198, vi 200; none "en"
(benchmarks/language_cost.py)."""

from __future__ import annotations

import functools
import math
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np
from django.conf import settings

UNDETERMINED = "und"


class _Model:
    def __init__(self, candidates: tuple[str, ...]) -> None:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier

        identifier: Any = LanguageIdentifier.from_pickled_model(MODEL_FILE)
        if candidates:
            identifier.set_languages(list(candidates))
        self.identifier = identifier
        self.weights = np.asarray(identifier.nb_ptc, dtype=np.float32)  # features x languages
        self.priors = np.asarray(identifier.nb_pc, dtype=np.float32)
        self.languages: list[str] = list(identifier.nb_classes)

    def classify(self, text: str) -> tuple[str, float]:
        data = _bytes(text)
        counts = self.identifier.instance2fv(data)
        present = np.flatnonzero(counts)
        if present.size == 0:
            return UNDETERMINED, 0.0
        scores = (np.log1p(counts[present].astype(np.float32)) @ self.weights[present] + self.priors) / math.sqrt(
            len(data)
        )
        probs = np.exp(scores - scores.max())
        probs /= probs.sum()
        best = int(probs.argmax())
        return self.languages[best], float(probs[best])


def _bytes(text: str) -> bytes:
    if text.isupper():  # SHOUTED text reads as its lower-case self
        text = text.lower()
    return unicodedata.normalize("NFC", text).encode("utf-8", errors="surrogatepass")


@functools.cache
def _model(candidates: tuple[str, ...]) -> _Model:
    return _Model(candidates)


def preload() -> None:
    """Load the detector's model (about 0.2 s) at process start (config.warmup), not in the
    first ingest request of each web process."""
    _model(tuple(settings.LANGUAGE_CANDIDATES))


def detect_language(text: str) -> str:
    """The ISO 639-1 code of `text`'s language, or UNDETERMINED."""
    sample = text[: settings.LANGUAGE_MAX_CHARS].strip()
    if not sample:
        return UNDETERMINED
    code, confidence = _model(tuple(settings.LANGUAGE_CANDIDATES)).classify(sample)
    return _answer(code, confidence)


def _answer(code: str, confidence: float) -> str:
    """The detector's best guess if it clears the bar for its language, else UNDETERMINED.
    The bar is lower for a language the text model was not validated on
    (LANGUAGE_UNVALIDATED_MIN_CONFIDENCE): there "und" would let the post be auto-approved."""
    if confidence >= settings.LANGUAGE_MIN_CONFIDENCE:
        return code
    if confidence >= settings.LANGUAGE_UNVALIDATED_MIN_CONFIDENCE and code not in settings.TEXT_VALIDATED_LANGUAGES:
        return code
    return UNDETERMINED


def detect_languages(texts: Sequence[str]) -> list[str]:
    """detect_language() of each text (a batch request's posts). Counting a batch's n-grams
    together in numpy cost about a third of the CPU per text, but that was under 1 % of a
    scored post's CPU end to end, so the detector's own feature extractor serves both."""
    return [detect_language(text) for text in texts]


def _post_text(text: str, preview_text: str) -> str:
    return text if text.strip() else preview_text


def post_language(*, text: str, preview_text: str = "") -> str:
    """The language of a post: its text, or the link preview's when the post has no text."""
    return detect_language(_post_text(text, preview_text))


def post_languages(posts: Sequence[tuple[str, str]]) -> list[str]:
    """post_language() of many (text, preview text) pairs."""
    return detect_languages([_post_text(text, preview_text) for text, preview_text in posts])
