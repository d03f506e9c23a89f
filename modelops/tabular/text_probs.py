"""Where the fusion model's ``text_prob`` / ``preview_prob`` come from at bootstrap.

The fusion tree must learn how far to trust the text model on text that model never trained
on, so these probabilities are computed on the SMS validation and test splits only:

- ``OnnxTextProbabilities``: the real DistilBERT text model (textmodel's artifact directory,
  ``modelops.text.inference.OnnxTextClassifier``), trained on the SMS train split.
- ``TfidfTextProbabilities``: a TF-IDF + logistic-regression fallback fit on the SMS train
  split, for tests and machines where no text model has been trained yet. The model card says
  which one was used; artifacts built on the fallback should be rebuilt once the text model
  exists, because the fusion tree calibrates itself to the text model's behaviour.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

__all__ = [
    "OnnxTextProbabilities",
    "TextProbabilities",
    "TfidfTextProbabilities",
    "find_text_model_dir",
    "resolve_text_probabilities",
]

logger = logging.getLogger(__name__)


class TextProbabilities(Protocol):
    kind: str  # "onnx" | "tfidf_fallback"

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray: ...

    def describe(self) -> dict[str, Any]: ...


class TfidfTextProbabilities:
    kind = "tfidf_fallback"

    def __init__(self, train_texts: Sequence[str], train_labels: Sequence[int], *, c: float = 10.0) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import Pipeline

        self.c = c
        self.train_size = len(train_texts)
        self.pipeline = Pipeline(
            [
                ("tfidf", TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, lowercase=True)),
                ("lr", LogisticRegression(C=c, solver="liblinear", max_iter=1000)),
            ]
        ).fit(list(train_texts), [int(y) for y in train_labels])

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0)
        return np.asarray(self.pipeline.predict_proba(list(texts))[:, 1], dtype=np.float64)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "description": f"FALLBACK: TF-IDF word 1-2 grams + LogisticRegression(C={self.c:g}) "
            f"fit on the SMS train split ({self.train_size} texts); no DistilBERT text model was available",
        }


class OnnxTextProbabilities:
    kind = "onnx"

    def __init__(self, model_dir: Path, *, batch_size: int = 32) -> None:
        from modelops.text.inference import OnnxTextClassifier

        self.model_dir = Path(model_dir).resolve()
        self.batch_size = batch_size
        self.classifier: Any = OnnxTextClassifier(self.model_dir)

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        out: list[float] = []
        for start in range(0, len(texts), self.batch_size):
            probs = self.classifier.predict_proba(list(texts[start : start + self.batch_size]))
            out.extend(float(p) for p in np.asarray(probs).reshape(-1))
        return np.asarray(out, dtype=np.float64)

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "kind": self.kind,
            "description": "DistilBERT text model (ONNX Runtime), trained on the SMS train split",
            "model_dir": str(self.model_dir),
            "version": self.model_dir.name,
        }
        for attr in ("file", "max_length"):
            value = getattr(self.classifier, attr, None)
            if value is not None:
                info[attr] = value if isinstance(value, str | int | float) else str(value)
        return info


def find_text_model_dir(candidates: Sequence[Path]) -> Path | None:
    """The first candidate that holds a text model: a directory with an ``.onnx`` file next to
    its tokenizer files (textmodel's export layout), or a text artifact root whose ``current``
    points at one."""
    for candidate in candidates:
        path = Path(candidate)
        if (path / "current").exists():
            path = (path / "current").resolve()
        if path.is_dir() and any(path.glob("*.onnx")):
            return path
    return None


def resolve_text_probabilities(
    *,
    text_dirs: Sequence[Path],
    train_texts: Sequence[str],
    train_labels: Sequence[int],
    force_fallback: bool = False,
) -> TextProbabilities:
    """The real text model when one is found in ``text_dirs`` and loads, else the fallback."""
    if not force_fallback:
        model_dir = find_text_model_dir(text_dirs)
        if model_dir is not None:
            try:
                return OnnxTextProbabilities(model_dir)
            except Exception:
                logger.exception("scoring.tabular.text_model_unusable dir=%s; using the TF-IDF fallback", model_dir)
    return TfidfTextProbabilities(train_texts, train_labels)
