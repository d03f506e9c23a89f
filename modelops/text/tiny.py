"""A random tiny DistilBERT with the real uncased tokenizer, for fast tests (export, serving, batching)."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import DistilBertConfig, DistilBertForSequenceClassification, DistilBertTokenizerFast

from modelops.text.convert import ID2LABEL, LABEL2ID, packaged_bert_dir


def tiny_config(*, dim: int = 32, n_layers: int = 2, n_heads: int = 2) -> DistilBertConfig:
    return DistilBertConfig(
        vocab_size=30522,
        max_position_embeddings=512,
        dim=dim,
        n_layers=n_layers,
        n_heads=n_heads,
        hidden_dim=dim * 4,
        activation="gelu",
        initializer_range=0.2,  # wide init: random-model scores spread over (0, 1)
        num_labels=2,
        id2label=ID2LABEL,
        label2id=LABEL2ID,
    )


def build_tiny_checkpoint(output_dir: Path, *, seed: int = 0) -> Path:
    """Save a randomly initialised tiny DistilBertForSequenceClassification + the real tokenizer."""
    torch.manual_seed(seed)
    model = DistilBertForSequenceClassification(tiny_config()).eval()
    tokenizer = DistilBertTokenizerFast(
        vocab_file=str(packaged_bert_dir() / "vocab.txt"), do_lower_case=True, model_max_length=512
    )
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    return output_dir
