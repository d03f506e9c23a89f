"""ONNX Runtime text classifier: texts -> spam probabilities.

Tokenise with truncation, pad each batch only to its own longest text, run the session, softmax.
Texts are grouped by length so long and short messages do not share a batch; a text's probability
does not depend on what it is batched with (tests/modelops/test_text_export.py checks this).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from transformers import AutoTokenizer

from modelops.triton_configs import TEXT_DISABLED_OPTIMIZERS

SERVING_FILE = "serving.json"
FP32_FILE = "model.onnx"
INT8_FILE = "model.int8.onnx"
INPUT_NAMES = ("input_ids", "attention_mask")
OUTPUT_NAME = "logits"
SPAM_INDEX = 1
DEFAULT_MAX_LENGTH = 128


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
        batch_size: int = 32,
        threads: int | None = None,
    ) -> None:
        self.model_dir = Path(model_dir)
        serving = read_serving(self.model_dir)
        self.file = file or serving.get("model_file") or serving.get("file") or FP32_FILE
        self.max_length = int(max_length or serving.get("max_length", DEFAULT_MAX_LENGTH))
        self.batch_size = batch_size
        self.tokenizer = AutoTokenizer.from_pretrained(self.model_dir)
        self.pad_id = int(self.tokenizer.pad_token_id or 0)
        self.session = make_session(self.model_dir / self.file, threads=threads)

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        encoded = self.tokenizer(list(texts), truncation=True, max_length=self.max_length, padding=False)
        return [list(ids) for ids in encoded["input_ids"]]

    def logits_for_ids(self, ids: Sequence[Sequence[int]]) -> np.ndarray:
        """One session run over exactly these sequences (padded to the longest)."""
        out = self.session.run([OUTPUT_NAME], pad_ids(ids, self.pad_id))[0]
        return np.asarray(out)

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """Spam probability per text, in input order."""
        if not texts:
            return np.zeros(0, dtype=np.float64)
        ids = self.encode(texts)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        probs = np.zeros(len(ids), dtype=np.float64)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            probs[batch] = softmax_spam(self.logits_for_ids([ids[i] for i in batch]))
        return probs
