"""Fine-tune DistilBertForSequenceClassification for spam (1) vs ham (0) on CPU.

CPU recipe: pre-tokenise once without padding, bucket texts of similar length into a batch and pad
each batch only to its own longest text (short SMS dominate, so fixed-length padding would waste most
of the compute), truncate at ``max_length`` tokens (settings.TEXT_MAX_LENGTH, 128 by default: it keeps
the head of the text, covers almost every SMS whole, and the card records how many were cut),
AdamW with linear warm-up/decay, the best epoch chosen on validation F1 (then validation loss).
"""

from __future__ import annotations

import json
import math
import platform
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import (
    AutoTokenizer,
    DistilBertForSequenceClassification,
    PreTrainedTokenizerBase,
    get_linear_schedule_with_warmup,
)

from modelops import current
from modelops.current import set_current
from modelops.text.baseline import save_lexical, train_baseline
from modelops.text.batches import encode, length_sorted_batches, pad_batch
from modelops.text.calibrate import calibrate_text_model
from modelops.text.card import write_model_card
from modelops.text.convert import ID2LABEL, LABEL2ID, describe_base
from modelops.text.data import SmsSplits
from modelops.text.metrics import spam_metrics

METRICS_FILE = "metrics.json"


@dataclass(frozen=True)
class TrainConfig:
    base: str
    max_length: int = 128
    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 1e-4
    weight_decay: float = 0.01
    warmup_ratio: float = 0.06
    max_grad_norm: float = 1.0
    seed: int = 42
    threads: int = 2
    eval_batch_size: int = 64
    bucket_batches: int = 20  # batches per length-sorted pool: similar lengths, still shuffled
    max_steps: int | None = None  # smoke tests: stop after this many optimizer steps
    time_budget_s: float | None = 12 * 60  # skip an epoch that would not finish inside the budget
    # The 30,522 x dim word-embedding matrix is half the parameters; its dense gradient and AdamW state
    # cost more CPU per step than they buy on a few thousand SMS, so it stays as pre-trained.
    freeze_word_embeddings: bool = True


@dataclass
class EpochLog:
    epoch: int
    train_loss: float
    validation_loss: float
    validation: dict[str, float]
    seconds: float


@dataclass
class TrainedTextModel:
    model: DistilBertForSequenceClassification
    tokenizer: PreTrainedTokenizerBase
    best_epoch: int
    history: list[EpochLog] = field(default_factory=list)
    train_seconds: float = 0.0
    stopped_early: str | None = None


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def bucketed_batches(lengths: Sequence[int], batch_size: int, pool_batches: int, rng: random.Random) -> list[list[int]]:
    """Shuffle, sort each pool of ``pool_batches`` batches by length, cut into batches, shuffle batch order."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    pool = batch_size * max(1, pool_batches)
    batches: list[list[int]] = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start : start + pool], key=lambda i: lengths[i])
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


@torch.inference_mode()
def predict_proba(
    model: DistilBertForSequenceClassification,
    tokenizer: PreTrainedTokenizerBase,
    texts: Sequence[str],
    *,
    max_length: int,
    batch_size: int = 64,
    labels: Sequence[int] | None = None,
) -> tuple[np.ndarray, float]:
    """Spam probabilities in input order (length-sorted batches), and the mean loss when labels are given."""
    model.eval()
    ids = encode(tokenizer, texts, max_length)
    probs = np.zeros(len(ids), dtype=np.float64)
    loss_sum = 0.0
    for batch in length_sorted_batches([len(s) for s in ids], batch_size):
        input_ids, mask = pad_batch([ids[i] for i in batch], tokenizer.pad_token_id or 0)
        logits = model(input_ids=input_ids, attention_mask=mask).logits
        probs[batch] = torch.softmax(logits, dim=-1)[:, 1].double().numpy()
        if labels is not None:
            target = torch.tensor([labels[i] for i in batch], dtype=torch.long)
            loss_sum += float(torch.nn.functional.cross_entropy(logits, target, reduction="sum"))
    return probs, (loss_sum / max(1, len(ids)) if labels is not None else float("nan"))


def load_base(base: str) -> tuple[DistilBertForSequenceClassification, PreTrainedTokenizerBase]:
    """A local converted checkpoint or a hub id (e.g. distilbert-base-uncased): the same from_pretrained call."""
    model = DistilBertForSequenceClassification.from_pretrained(
        base, num_labels=2, id2label=ID2LABEL, label2id=LABEL2ID
    )
    tokenizer = AutoTokenizer.from_pretrained(base)
    return model, tokenizer


def train_text_model(  # noqa: PLR0915 - one training run, its steps in order
    train_texts: Sequence[str],
    train_labels: Sequence[int],
    val_texts: Sequence[str],
    val_labels: Sequence[int],
    config: TrainConfig,
    *,
    progress: bool = True,
    log: Callable[[str], None] = print,
    train_weights: Sequence[float] | None = None,
) -> TrainedTextModel:
    """Fine-tune from ``config.base``; keep the weights of the best validation epoch.

    ``train_weights``: optional per-text sample weights (the loss of a batch is the weighted
    mean of its texts' cross-entropies); retraining weighs texts by where they came from."""
    torch.set_num_threads(config.threads)
    _seed_everything(config.seed)
    model, tokenizer = load_base(config.base)
    if config.freeze_word_embeddings:
        model.distilbert.embeddings.word_embeddings.weight.requires_grad_(False)
    pad_id = tokenizer.pad_token_id or 0
    ids = encode(tokenizer, train_texts, config.max_length)
    lengths = [len(s) for s in ids]
    labels = torch.tensor(list(train_labels), dtype=torch.long)
    weights = None if train_weights is None else torch.tensor(list(train_weights), dtype=torch.float32)
    rng = random.Random(config.seed)

    steps_per_epoch = math.ceil(len(ids) / config.batch_size)
    total_steps = steps_per_epoch * config.epochs
    if config.max_steps is not None:
        total_steps = min(total_steps, config.max_steps)
    no_decay = ("bias", "LayerNorm.weight", "layer_norm.weight")
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [
        {"params": [p for n, p in trainable if not any(k in n for k in no_decay)], "weight_decay": config.weight_decay},
        {"params": [p for n, p in trainable if any(k in n for k in no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=config.learning_rate, fused=True)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(config.warmup_ratio * total_steps), total_steps)

    result = TrainedTextModel(model=model, tokenizer=tokenizer, best_epoch=0)
    best_key: tuple[float, float] | None = None
    best_state: dict[str, torch.Tensor] | None = None
    step = 0
    started = time.monotonic()
    bar = tqdm(total=total_steps, desc="fine-tune", unit="step", disable=not progress, mininterval=5.0)
    for epoch in range(1, config.epochs + 1):
        epoch_start = time.monotonic()
        if config.time_budget_s is not None and result.history:
            elapsed = epoch_start - started
            if elapsed + result.history[-1].seconds > config.time_budget_s:
                result.stopped_early = (
                    f"stopped before epoch {epoch}: {elapsed:.0f}s used, one more epoch would exceed the "
                    f"{config.time_budget_s:.0f}s budget"
                )
                log(result.stopped_early)
                break
        model.train()
        loss_sum, seen = 0.0, 0
        for batch in bucketed_batches(lengths, config.batch_size, config.bucket_batches, rng):
            if config.max_steps is not None and step >= config.max_steps:
                break
            input_ids, mask = pad_batch([ids[i] for i in batch], pad_id)
            out = model(input_ids=input_ids, attention_mask=mask, labels=labels[batch])
            loss = out.loss
            if weights is not None:
                per_text = torch.nn.functional.cross_entropy(out.logits, labels[batch], reduction="none")
                loss = (per_text * weights[batch]).sum() / weights[batch].sum().clamp_min(1e-12)
            loss.backward()
            torch.nn.utils.clip_grad_norm_([p for _, p in trainable], config.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            loss_sum += loss.item() * len(batch)
            seen += len(batch)
            step += 1
            bar.update(1)
            bar.set_postfix(epoch=epoch, loss=f"{loss_sum / seen:.4f}", refresh=False)
        val_probs, val_loss = predict_proba(
            model,
            tokenizer,
            val_texts,
            max_length=config.max_length,
            batch_size=config.eval_batch_size,
            labels=val_labels,
        )
        val = spam_metrics(val_labels, val_probs)
        entry = EpochLog(epoch, loss_sum / max(1, seen), val_loss, val, time.monotonic() - epoch_start)
        result.history.append(entry)
        log(
            f"epoch {epoch}: train_loss={entry.train_loss:.4f} val_loss={val_loss:.4f} "
            f"val_f1={val['f1']:.4f} val_acc={val['accuracy']:.4f} ({entry.seconds:.0f}s)"
        )
        key = (val["f1"], -val_loss)
        if best_key is None or key > best_key:
            best_key = key
            result.best_epoch = epoch
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        if config.max_steps is not None and step >= config.max_steps:
            break
    bar.close()
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    result.train_seconds = time.monotonic() - started
    return result


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
) -> Path:
    """Train transformer + baseline, evaluate on test, write checkpoint, metrics.json, MODEL_CARD.md."""
    version = version or new_version()
    out = Path(text_dir) / version
    out.mkdir(parents=True, exist_ok=False)
    total_start = time.monotonic()
    trained = train_text_model(
        splits.train.texts,
        splits.train.labels,
        splits.validation.texts,
        splits.validation.labels,
        config,
        progress=progress,
        log=log,
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
    baseline = train_baseline(
        splits.train.texts, splits.train.labels, splits.validation.texts, splits.validation.labels
    )
    baseline_seconds = time.monotonic() - baseline_start
    trained.model.save_pretrained(out)
    trained.tokenizer.save_pretrained(out)
    save_lexical(baseline, out)  # the lexical half of the served text score

    metrics: dict[str, Any] = {
        "version": version,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "base_checkpoint": config.base,
        "base_description": describe_base(config.base),
        "data": splits.summary(),
        "hyperparameters": asdict(config),
        "truncation": truncation_stats(trained.tokenizer, splits.train.texts, config.max_length),
        "training": {
            "seconds": round(trained.train_seconds, 1),
            "total_seconds": round(time.monotonic() - total_start, 1),
            "best_epoch": trained.best_epoch,
            "stopped_early": trained.stopped_early,
            "history": [asdict(h) for h in trained.history],
            "torch": torch.__version__,
            "threads": config.threads,
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
    write_metrics(out, metrics)
    write_model_card(out, metrics)
    set_current(Path(text_dir), out)
    return out


def write_metrics(model_dir: Path, metrics: dict[str, Any]) -> None:
    (Path(model_dir) / METRICS_FILE).write_text(json.dumps(metrics, indent=2, default=str) + "\n")


def read_metrics(model_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(model_dir) / METRICS_FILE).read_text())
    return data
