"""Train the text model end to end: fine-tune DistilBertForSequenceClassification for spam (1) vs
ham (0) (modelops.text.finetune has the loop and its device handling), calibrate, fit the lexical
baseline, and write the checkpoint, metrics.json and MODEL_CARD.md.

Texts are truncated at ``max_length`` tokens (settings.TEXT_MAX_LENGTH, 128 by default: it keeps
the head of the text, covers almost every SMS whole, and the card records how many were cut).
"""

from __future__ import annotations

import json
import platform
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import PreTrainedTokenizerBase

from modelops import current
from modelops.current import set_current
from modelops.text.baseline import DEFAULT_LEXICAL_WEIGHT, blend, save_lexical, train_baseline
from modelops.text.benign_corpora import BenignSplits
from modelops.text.calibrate import calibrate_text_model
from modelops.text.card import write_model_card
from modelops.text.cold_start import benign_report, mix_benign
from modelops.text.convert import describe_base
from modelops.text.data import SmsSplits
from modelops.text.distill import build_student, shuffled_copies, teacher_logits
from modelops.text.familiarity import fit_familiarity, save_familiarity
from modelops.text.finetune import TrainConfig, load_base, predict_proba, train_text_model
from modelops.text.metrics import spam_metrics

METRICS_FILE = "metrics.json"


def truncation_stats(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], max_length: int) -> dict[str, float]:
    lengths = [len(s) for s in tokenizer(list(texts), truncation=False, padding=False)["input_ids"]]
    arr = np.asarray(lengths)
    return {
        "max_length": max_length,
        "truncated_texts": int((arr > max_length).sum()),
        "truncated_fraction": float((arr > max_length).mean()) if len(arr) else 0.0,
        "median_tokens": float(np.median(arr)) if len(arr) else 0.0,
        "p99_tokens": float(np.percentile(arr, 99)) if len(arr) else 0.0,
        "max_tokens": int(arr.max()) if len(arr) else 0,
    }


def new_version() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def current_model_dir(text_dir: Path) -> Path:
    """The artifact dir named by text_dir/current (modelops.current)."""
    return current.current_dir(text_dir, missing=f"no current text model under {text_dir}; run train_text_model")


def trained_model_dir(text_dir: Path, model_dir: str | Path | None = None) -> Path:
    """`model_dir`, or the current text model under text_dir, checked to hold a trained
    checkpoint; FileNotFoundError says which is missing (the commands that post-process a
    trained model share this)."""
    path = Path(model_dir) if model_dir else current_model_dir(text_dir)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path} holds no trained checkpoint")
    return path


def run_training(
    splits: SmsSplits,
    config: TrainConfig,
    text_dir: Path,
    *,
    version: str | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
    benign: BenignSplits | None = None,
    remove_threshold: float = 0.9,
    teacher: Path | None = None,
    student_layers: Sequence[int] | None = None,
    make_current: bool = True,
) -> Path:
    """Train transformer + baseline, evaluate on test, write checkpoint, metrics.json, MODEL_CARD.md.

    `benign`: legitimate writing of other kinds added to train and validation with spam placed
    in it (modelops.text.cold_start); its held-out part is measured per corpus.
    `teacher`, `student_layers`: train a student of those layers of the teacher checkpoint
    (modelops.text.distill) instead of config.base.
    `make_current`: point text/current at the new version (a teacher is not served)."""
    if teacher is not None and not student_layers:
        raise ValueError("a student needs the teacher's layers to keep")
    sms = splits
    if benign is not None and benign.train:
        splits = mix_benign(sms, benign, seed=config.seed)
    version = version or new_version()
    out = Path(text_dir) / version
    out.mkdir(parents=True, exist_ok=False)
    total_start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="student-base-") as scratch:
        train_texts, train_labels = list(splits.train.texts), list(splits.train.labels)
        soft_targets, distilled, start = None, None, config.base
        if teacher is not None:
            start = str(teacher)
            config, train_texts, train_labels, soft_targets, distilled = _student(
                config,
                Path(teacher),
                list(student_layers or []),
                train_texts,
                train_labels,
                scratch=Path(scratch),
                log=log,
            )
        trained = train_text_model(
            train_texts,
            train_labels,
            splits.validation.texts,
            splits.validation.labels,
            config,
            progress=progress,
            log=log,
            soft_targets=soft_targets,
        )
    calibration = calibrate_text_model(
        trained.model,
        trained.tokenizer,
        validation=(splits.validation.texts, splits.validation.labels),
        test=(splits.test.texts, splits.test.labels),
        max_length=config.max_length,
    )
    log(f"calibration: {calibration['method']} {calibration.get('temperature', '')}")
    test_probs, _ = predict_proba(
        trained.model,
        trained.tokenizer,
        splits.test.texts,
        max_length=config.max_length,
        batch_size=config.eval_batch_size,
    )
    baseline_start = time.monotonic()
    # The lexical half learns from the SMS splits alone: benign writing diluted its word weights
    # (SMS test F1 0.944 -> 0.925) while it already called little of that writing spam, and the
    # served blend with the broadly trained transformer scored higher on SMS with it
    # (benchmarks/cold_start.py; benchmarks/RESULTS.md).
    baseline = train_baseline(sms.train.texts, sms.train.labels, sms.validation.texts, sms.validation.labels)
    baseline_seconds = time.monotonic() - baseline_start
    trained.model.save_pretrained(out)
    trained.tokenizer.save_pretrained(out)
    save_lexical(baseline, out)  # the lexical half of the served text score
    # What the text model has seen: its train split, thresholds fitted on the test split.
    familiarity = fit_familiarity(splits.train.texts, splits.test.texts)
    save_familiarity(familiarity, out)

    metrics: dict[str, Any] = {
        "version": version,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "base_checkpoint": start,
        "base_description": describe_base(start),
        **({"distilled_from": distilled} if distilled is not None else {}),
        "data": {**splits.summary(), **({"benign": benign.summary()} if benign is not None else {})},
        # A student's config.base is a scratch folder gone by now: record where it started.
        "hyperparameters": asdict(replace(config, base=start)),
        "familiarity": familiarity.describe(),
        "truncation": truncation_stats(trained.tokenizer, splits.train.texts, config.max_length),
        "training": {
            "seconds": round(trained.train_seconds, 1),
            "total_seconds": round(time.monotonic() - total_start, 1),
            "best_epoch": trained.best_epoch,
            "stopped_early": trained.stopped_early,
            "history": [asdict(h) for h in trained.history],
            "torch": torch.__version__,
            "threads": config.threads,
            "device": trained.device,
            "precision": trained.precision,
            "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        },
        "test": {
            "pytorch_fp32": spam_metrics(splits.test.labels, test_probs),
            "baseline_tfidf_lr": spam_metrics(splits.test.labels, baseline.predict_proba(splits.test.texts)),
        },
        "baseline": {
            "description": baseline.describe(),
            "validation": baseline.validation,
            "seconds": baseline_seconds,
        },
        "labels": {"0": "ham", "1": "spam"},
        "calibration": calibration,
    }
    if benign is not None and benign.held_out:

        def transformer(texts: Sequence[str]) -> np.ndarray:
            probs, _ = predict_proba(
                trained.model,
                trained.tokenizer,
                list(texts),
                max_length=config.max_length,
                batch_size=config.eval_batch_size,
            )
            return probs

        def lexical(texts: Sequence[str]) -> np.ndarray:
            return baseline.predict_proba(list(texts))

        def served(texts: Sequence[str]) -> np.ndarray:
            return blend(transformer(texts), lexical(texts), DEFAULT_LEXICAL_WEIGHT)

        spam = [t for t, label in zip(sms.test.texts, sms.test.labels, strict=True) if label == 1]
        metrics["cold_start"] = benign_report(
            {"transformer": transformer, "lexical": lexical, "served": served},
            benign,
            spam,
            remove_threshold=remove_threshold,
        )
    write_metrics(out, metrics)
    write_model_card(out, metrics)
    if make_current:
        set_current(Path(text_dir), out)
    return out


def _student(
    config: TrainConfig,
    teacher: Path,
    layers: list[int],
    train_texts: list[str],
    train_labels: list[int],
    *,
    scratch: Path,
    log: Callable[[str], None],
) -> tuple[TrainConfig, list[str], list[int], np.ndarray | None, dict[str, Any]]:
    """What trains a student of ``layers`` of ``teacher``: the config (its base built in
    ``scratch``), the training texts and labels with the word-shuffled transfer copies added,
    the teacher's logits where the config weighs them, and the provenance to record."""
    log(f"distilling layers {layers} of {teacher}")
    config = replace(config, base=str(build_student(teacher, layers, scratch)))
    extra_texts, extra_labels = shuffled_copies(
        train_texts, train_labels, share=config.distill_shuffled_share, seed=config.seed
    )
    texts, labels = train_texts + extra_texts, train_labels + extra_labels
    soft_targets = None
    if config.distill_weight > 0:
        teacher_model, teacher_tokenizer = load_base(str(teacher))
        soft_targets = teacher_logits(teacher_model, teacher_tokenizer, texts, max_length=config.max_length)
    distilled = {
        "teacher": str(teacher),
        "layers": layers,
        "distill_weight": config.distill_weight,
        "shuffled_copies": len(extra_texts),
    }
    return config, texts, labels, soft_targets, distilled


def write_metrics(model_dir: Path, metrics: dict[str, Any]) -> None:
    (Path(model_dir) / METRICS_FILE).write_text(json.dumps(metrics, indent=2, default=str) + "\n")


def read_metrics(model_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(model_dir) / METRICS_FILE).read_text())
    return data
