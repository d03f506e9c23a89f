"""Token batches for the text model: what training and calibration both feed it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
from transformers import PreTrainedTokenizerBase


def encode(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], max_length: int) -> list[list[int]]:
    """Token ids per text, truncated, unpadded."""
    return list(tokenizer(list(texts), truncation=True, max_length=max_length, padding=False)["input_ids"])


def pad_batch(ids: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad to the longest sequence of this batch only (right padding)."""
    width = max(len(seq) for seq in ids)
    input_ids = torch.full((len(ids), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for row, seq in enumerate(ids):
        input_ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        mask[row, : len(seq)] = 1
    return input_ids, mask


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> Iterator[list[int]]:
    """Indices in batches of similar length (inference: padding only to each batch's longest)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]
