"""Temperature scaling of a fine-tuned text model (modelops.calibration says why temperature
and how it is folded into the classifier head)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from transformers import DistilBertForSequenceClassification, PreTrainedTokenizerBase

from modelops.calibration import (
    apply_temperature,
    calibration_summary,
    enough_to_calibrate,
    fit_temperature,
    fold_temperature,
)
from modelops.text.batches import encode, length_sorted_batches, pad_batch


@torch.inference_mode()
def predict_margins(
    model: DistilBertForSequenceClassification,
    tokenizer: PreTrainedTokenizerBase,
    texts: Sequence[str],
    *,
    max_length: int,
    batch_size: int = 64,
) -> np.ndarray:
    """Spam logit minus ham logit per text (input order): softmax spam probability = sigmoid(margin)."""
    model.eval()
    ids = encode(tokenizer, texts, max_length)
    out = np.zeros(len(ids), dtype=np.float64)
    for batch in length_sorted_batches([len(s) for s in ids], batch_size):
        input_ids, mask = pad_batch([ids[i] for i in batch], tokenizer.pad_token_id or 0)
        logits = model(input_ids=input_ids, attention_mask=mask).logits.double()
        out[batch] = (logits[:, 1] - logits[:, 0]).numpy()
    return out


def calibrate_text_model(
    model: DistilBertForSequenceClassification,
    tokenizer: PreTrainedTokenizerBase,
    *,
    validation: tuple[Sequence[str], Sequence[int]],
    test: tuple[Sequence[str], Sequence[int]] | None,
    max_length: int,
) -> dict[str, Any]:
    """Fit T on the validation texts, fold it into `model` (in place) and return the summary the
    model card and run page show: ECE before/after on validation, and on test when given (the
    honest number: T was not fitted there). With too little validation data nothing is changed."""
    val_texts, val_labels = validation
    if not enough_to_calibrate(val_labels):
        return {"method": "none", "reason": f"too little validation data ({len(val_labels)} texts)"}
    val_margins = predict_margins(model, tokenizer, val_texts, max_length=max_length)
    temperature = fit_temperature(val_margins, val_labels)
    summary: dict[str, Any] = {
        "validation": calibration_summary(
            val_labels,
            apply_temperature(val_margins, 1.0),
            apply_temperature(val_margins, temperature),
            method="temperature",
            parameters={"temperature": round(temperature, 6)},
            fitted_on=f"validation split ({len(val_labels)} texts)",
        ),
    }
    if test is not None and len(test[0]):
        test_margins = predict_margins(model, tokenizer, test[0], max_length=max_length)
        summary["test"] = calibration_summary(
            test[1],
            apply_temperature(test_margins, 1.0),
            apply_temperature(test_margins, temperature),
            method="temperature",
            parameters={"temperature": round(temperature, 6)},
            fitted_on=f"validation split ({len(val_labels)} texts)",
        )
    fold_temperature(model, temperature)
    summary.update(
        {
            "method": "temperature",
            "temperature": round(temperature, 6),
            "parameters": {"temperature": round(temperature, 6)},
            "applied": "folded into the classifier head (weight and bias divided by T): every export serves it",
        }
    )
    return summary
