"""ONNX Runtime text classifier: texts -> spam probabilities.

Tokenise, pad each batch only to its own longest input, run the session, softmax. A text longer
than max_length tokens is scored as the served pipeline scores it: the maximum over up to
max_windows windows from its head to its tail (text_windows; max_windows 1 = truncation, the
head only), blended with the lexical model when the model dir has one (baseline.blend, at
serving.json's lexical_weight). Inputs are grouped by length so long and short messages do not share a batch; a
text's probability does not depend on what it is batched with (tests/modelops/test_text_export.py
checks this).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from transformers import AutoTokenizer

from modelops.text.adapt import TransformerRows
from modelops.text.baseline import DEFAULT_LEXICAL_WEIGHT, blend, load_lexical
from modelops.triton_configs import TEXT_DISABLED_OPTIMIZERS

SERVING_FILE = "serving.json"
FP32_FILE = "model.onnx"
INT8_FILE = "model.int8.onnx"
INPUT_NAMES = ("input_ids", "attention_mask")
OUTPUT_NAME = "logits"
SPAM_INDEX = 1
DEFAULT_MAX_LENGTH = 128
# Windows per long text when serving.json does not say (publish then uses
# settings.TEXT_MAX_WINDOWS, whose default is the same).
DEFAULT_MAX_WINDOWS = 8


def text_windows(ids: Sequence[int], max_length: int, max_windows: int) -> list[list[int]]:
    """The model inputs of one tokenized text (special tokens included: ids[0] and ids[-1]),
    each at most max_length tokens: the text itself when it fits; else up to max_windows
    windows, the first at the head, the last at the tail, the others evenly between, each
    wrapped in the text's first and last special tokens. The served pipeline has the same
    function (triton_repository/spam_pipeline/model.py, which cannot import the project);
    tests/modelops/test_text_windows.py holds the two to each other."""
    if len(ids) <= max_length:
        return [list(ids)]
    first, content, last = ids[0], ids[1:-1], ids[-1]
    body = max_length - 2
    count = max(1, min(max_windows, -(-len(content) // body)))
    if count == 1:
        return [[first, *content[:body], last]]
    span = len(content) - body
    starts = sorted({i * span // (count - 1) for i in range(count)})
    return [[first, *content[start : start + body], last] for start in starts]


def read_serving(model_dir: Path) -> dict[str, Any]:
    path = Path(model_dir) / SERVING_FILE
    data: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
    return data


def session_options(*, threads: int | None = None) -> ort.SessionOptions:
    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    # The same fusions left off as in serving, so the evaluated score is the served one.
    options.add_session_config_entry("optimization.disable_specified_optimizers", ";".join(TEXT_DISABLED_OPTIMIZERS))
    return options


def make_session(path: Path, *, threads: int | None = None) -> ort.InferenceSession:
    options = session_options(threads=threads)
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def softmax_spam(logits: np.ndarray) -> np.ndarray:
    z = logits.astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return np.asarray(e[:, SPAM_INDEX] / e.sum(axis=-1))


def pad_ids(ids: Sequence[Sequence[int]], pad_id: int) -> dict[str, np.ndarray]:
    width = max(len(seq) for seq in ids)
    input_ids = np.full((len(ids), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(ids), width), dtype=np.int64)
    for row, seq in enumerate(ids):
        input_ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    return {"input_ids": input_ids, "attention_mask": mask}


class OnnxTextClassifier:
    """Spam probabilities from an exported text model dir (tokenizer files + model.onnx/model.int8.onnx).

    ``file`` defaults to the one serving.json names (model.onnx when there is no serving.json).
    """

    def __init__(
        self,
        model_dir: Path | str,
        *,
        file: str | None = None,
        max_length: int | None = None,
        max_windows: int | None = None,
        lexical_weight: float | None = None,
        batch_size: int = 32,
        threads: int | None = None,
    ) -> None:
        self.model_dir = Path(model_dir)
        serving = read_serving(self.model_dir)
        self.file = file or serving.get("model_file") or serving.get("file") or FP32_FILE
        self.max_length = int(max_length or serving.get("max_length", DEFAULT_MAX_LENGTH))
        self.max_windows = max(1, int(max_windows or serving.get("max_windows", DEFAULT_MAX_WINDOWS)))
        # The lexical blend, as served: the model dir's lexical model at serving.json's weight.
        self.lexical = load_lexical(self.model_dir)
        weight = serving.get("lexical_weight", DEFAULT_LEXICAL_WEIGHT) if lexical_weight is None else lexical_weight
        self.lexical_weight = float(weight) if self.lexical is not None else 0.0
        self.batch_size = batch_size
        self.tokenizer = AutoTokenizer.from_pretrained(self.model_dir)
        self.pad_id = int(self.tokenizer.pad_token_id or 0)
        self.session = make_session(self.model_dir / self.file, threads=threads)

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        encoded = self.tokenizer(list(texts), truncation=True, max_length=self.max_length, padding=False)
        return [list(ids) for ids in encoded["input_ids"]]

    def windows(self, texts: Sequence[str]) -> list[list[list[int]]]:
        """Per text, its model inputs (text_windows)."""
        return [rows for rows, _ in self._windows(texts)]

    def _windows(self, texts: Sequence[str]) -> list[tuple[list[list[int]], bool]]:
        encoded = self.tokenizer(list(texts), truncation=False, padding=False, verbose=False)
        return [
            (text_windows(list(ids), self.max_length, self.max_windows), len(ids) <= self.max_length)
            for ids in encoded["input_ids"]
        ]

    def _window_texts(self, text: str, rows: Sequence[Sequence[int]], fits: bool) -> list[str]:
        """What the lexical model reads per input: the text when it fits in one, else each
        window's tokens decoded, as spam_pipeline does (the same tokenizers decoder)."""
        if fits:
            return [text]
        decoder = self.tokenizer.backend_tokenizer
        return [decoder.decode(list(row), skip_special_tokens=True) for row in rows]

    def logits_for_ids(self, ids: Sequence[Sequence[int]]) -> np.ndarray:
        """One session run over exactly these sequences (padded to the longest)."""
        out = self.session.run([OUTPUT_NAME], pad_ids(ids, self.pad_id))[0]
        return np.asarray(out)

    def transformer_rows(self, texts: Sequence[str]) -> TransformerRows:
        """Per model input of `texts`: the text it belongs to, the transformer's spam
        probability and what the lexical half reads for it (the input's own words)."""
        if not texts:
            return TransformerRows(owners=np.zeros(0, dtype=np.int64), probs=np.zeros(0), texts=[], count=0)
        per_text = self._windows(texts)
        ids = [row for rows, _ in per_text for row in rows]
        owners = np.asarray([t for t, (rows, _) in enumerate(per_text) for _ in rows], dtype=np.int64)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        row_probs = np.zeros(len(ids), dtype=np.float64)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            row_probs[batch] = softmax_spam(self.logits_for_ids([ids[i] for i in batch]))
        row_texts = [w for t, (rows, fits) in enumerate(per_text) for w in self._window_texts(texts[t], rows, fits)]
        return TransformerRows(owners=owners, probs=row_probs, texts=row_texts, count=len(texts))

    def row_scores(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Per model input of `texts`: (the text it belongs to, the transformer's spam
        probability, the lexical model's on the input's own words; None without a lexical
        model). predict_proba blends and takes the maximum; the cascade (modelops.text.cascade)
        decides from the two halves."""
        rows = self.transformer_rows(texts)
        lexical = None
        if self.lexical is not None and self.lexical_weight > 0:
            lexical = np.asarray(self.lexical.predict_proba(rows.texts)[:, 1], dtype=np.float64)
        return rows.owners, rows.probs, lexical

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """Spam probability per text, in input order."""
        if not texts:
            return np.zeros(0, dtype=np.float64)
        owners, row_probs, lexical = self.row_scores(texts)
        if lexical is not None:
            # Each window blended with the lexical score of its own words, then the maximum.
            row_probs = blend(row_probs, lexical, self.lexical_weight)
        probs = np.full(len(texts), -np.inf)
        np.maximum.at(probs, owners, row_probs)
        return probs
