"""The fine-tune loop of the text model: DistilBertForSequenceClassification, spam (1) vs ham (0).

Recipe: pre-tokenise once without padding, bucket texts of similar length into a batch and pad each
batch only to its own longest text (short SMS dominate, so fixed-length padding would waste most of
the compute), truncate at ``max_length`` tokens, AdamW with linear warm-up/decay, the best epoch
chosen on validation F1 (then validation loss).

It runs on a GPU when one is present (``TrainConfig.device``): the model and the batches go to
the device. ``TrainConfig.precision`` may ask for autocast there, fp16 with a gradient scaler
(fp16's narrow range would let small gradients underflow to zero) or bf16 without one (same
range as fp32); the default stays fp32 because on this 6-layer model in batches of 32 the GPU
waits on kernel launches, and autocast adds casts. Measured with scripts/gpu_session.py on one
NVIDIA H200, two epochs of the SMS train split: fp32 3.4 s (1,885 texts/s, validation included),
bf16 20.3 s, fp16 20.9 s (their first epoch 17.7 s, the second 2.5-3.1 s against fp32's 1.7 s);
test F1 0.964 fp32, 0.982 both half precisions. On the CPU it is always fp32: autocast and the
scaler are disabled, so the arithmetic is the CPU recipe's (same weights, bit for bit, as before
the device handling). The trained model comes back on the CPU, where calibration, export and
saving run.

Imports only torch, transformers, numpy and project modules that need nothing else, so
benchmarks/gpu_check.py and scripts/gpu_session.py can train on a stock PyTorch image.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import (
    AutoTokenizer,
    DistilBertForSequenceClassification,
    PreTrainedTokenizerBase,
    get_linear_schedule_with_warmup,
)

from modelops.text.batches import encode, length_sorted_batches, pad_batch
from modelops.text.convert import ID2LABEL, LABEL2ID
from modelops.text.distill import distillation_loss
from modelops.text.metrics import spam_metrics

PRECISIONS = ("fp32", "fp16", "bf16")


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
    # What the budget counts. "wall": seconds on the clock, for a run that must end inside a
    # time limit (an adaptation round inside its Celery task). "cpu": this process's CPU seconds
    # per training thread, so that other work on the machine slows a run down without cutting it
    # short (on two shared cores the wall clock stopped the bootstrap after one of its three
    # epochs, and its served text model fell under the SMS F1 floor).
    budget_clock: str = "wall"
    # The 30,522 x dim word-embedding matrix is half the parameters; its dense gradient and AdamW state
    # cost more CPU per step than they buy on a few thousand SMS, so it stays as pre-trained.
    freeze_word_embeddings: bool = True
    # The embeddings and this many of the lowest transformer layers stay as the base has them (a
    # negative value: all but the top N): a short fine-tune on a few hundred labels then moves only
    # the top of the model.
    freeze_layers: int = 0
    device: str = "auto"  # "auto": the first CUDA GPU when there is one, else the CPU; or "cpu", "cuda:1"
    precision: str = "fp32"  # or "fp16", "bf16": autocast on a GPU (module docstring); the CPU is always fp32
    # A student (modelops.text.distill): the share of each text's loss that is the distillation term
    # against the teacher's logits, its temperature, and the share of the training texts added
    # word-shuffled. Both off by default: a student of the teacher's own layers trained on the
    # labels alone matched the teacher on every suite, and either term made unseen benign writing
    # score higher (docs/design.md, "How deep the text model is").
    distill_weight: float = 0.0
    distill_temperature: float = 2.0
    distill_shuffled_share: float = 0.0


@dataclass
class EpochLog:
    epoch: int
    train_loss: float
    validation_loss: float
    validation: dict[str, float]
    seconds: float
    samples: int = 0


@dataclass
class TrainedTextModel:
    model: DistilBertForSequenceClassification
    tokenizer: PreTrainedTokenizerBase
    best_epoch: int
    history: list[EpochLog] = field(default_factory=list)
    train_seconds: float = 0.0
    stopped_early: str | None = None
    device: str = "cpu"
    precision: str = "fp32"


def select_device(preference: str = "auto", *, cuda_available: bool | None = None) -> torch.device:
    """The device to train on; asking for CUDA where there is none is an error, not a silent CPU run."""
    available = torch.cuda.is_available() if cuda_available is None else cuda_available
    if preference == "auto":
        return torch.device("cuda" if available else "cpu")
    device = torch.device(preference)
    if device.type == "cuda" and not available:
        raise ValueError(f"device {preference!r} asked for, but no CUDA GPU is available")
    return device


def select_precision(device: torch.device, preference: str = "fp32", *, bf16_supported: bool | None = None) -> str:
    """The precision asked for on a GPU; fp32 on the CPU (the reference recipe), whatever was asked."""
    if preference not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, not {preference!r}")
    if device.type != "cuda":
        return "fp32"
    supported = torch.cuda.is_bf16_supported() if bf16_supported is None else bf16_supported
    if preference == "bf16" and not supported:
        raise ValueError(f"bf16 asked for, but {device} does not support it; use fp16")
    return preference


def autocast(device: torch.device, precision: str) -> AbstractContextManager[object]:
    if precision == "fp32":
        return nullcontext()
    dtype = torch.float16 if precision == "fp16" else torch.bfloat16
    return torch.autocast(device_type=device.type, dtype=dtype)


def to_device(
    model: DistilBertForSequenceClassification, device: torch.device | str, dtype: torch.dtype | None = None
) -> DistilBertForSequenceClassification:
    """``model.to(device, dtype)`` in place; transformers wraps ``to`` in a way type checkers misread."""
    model.to(device=device, dtype=dtype)  # type: ignore[call-arg]
    return model


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
    """Spam probabilities in input order (length-sorted batches, fp32 on the model's device), and the
    mean loss when labels are given."""
    model.eval()
    device = next(model.parameters()).device
    ids = encode(tokenizer, texts, max_length)
    probs = np.zeros(len(ids), dtype=np.float64)
    loss_sum = 0.0
    for batch in length_sorted_batches([len(s) for s in ids], batch_size):
        input_ids, mask = pad_batch([ids[i] for i in batch], tokenizer.pad_token_id or 0)
        logits = model(input_ids=input_ids.to(device), attention_mask=mask.to(device)).logits.float()
        probs[batch] = torch.softmax(logits, dim=-1)[:, 1].double().cpu().numpy()
        if labels is not None:
            target = torch.tensor([labels[i] for i in batch], dtype=torch.long, device=device)
            loss_sum += float(torch.nn.functional.cross_entropy(logits, target, reduction="sum"))
    return probs, (loss_sum / max(1, len(ids)) if labels is not None else float("nan"))


def load_base(base: str) -> tuple[DistilBertForSequenceClassification, PreTrainedTokenizerBase]:
    """A local converted checkpoint or a hub id (e.g. distilbert-base-uncased): the same from_pretrained
    call. Weights stored in half precision are loaded as fp32, the dtype the optimizer works in."""
    model = DistilBertForSequenceClassification.from_pretrained(
        base, num_labels=2, id2label=ID2LABEL, label2id=LABEL2ID
    ).float()
    tokenizer = AutoTokenizer.from_pretrained(base)
    return model, tokenizer


def _freeze(model: DistilBertForSequenceClassification, config: TrainConfig) -> None:
    """Keep what the config says as the base has it (no gradient, no optimizer state)."""
    if config.freeze_word_embeddings:
        model.distilbert.embeddings.word_embeddings.weight.requires_grad_(False)
    layers = model.distilbert.transformer.layer
    # Negative: all but the top N, whatever the depth. At most all but the top layer either way.
    frozen = config.freeze_layers if config.freeze_layers >= 0 else len(layers) + config.freeze_layers
    frozen = min(frozen, len(layers) - 1)
    if frozen > 0:
        model.distilbert.embeddings.requires_grad_(False)
        for layer in layers[:frozen]:
            layer.requires_grad_(False)


def _weighed_loss(
    logits: torch.Tensor,
    target: torch.Tensor,
    weights: torch.Tensor | None,
    teacher: torch.Tensor | None,
    config: TrainConfig,
) -> torch.Tensor:
    """A batch's loss with per-text weights and/or a teacher's logits (train_text_model's docstring)."""
    per_text = torch.nn.functional.cross_entropy(logits.float(), target, reduction="none")
    if teacher is not None:
        soft = distillation_loss(logits, teacher, config.distill_temperature)
        per_text = (1 - config.distill_weight) * per_text + config.distill_weight * soft
    if weights is None:
        return per_text.mean()
    return (per_text * weights).sum() / weights.sum().clamp_min(1e-12)


def budget_clock(kind: str, threads: int) -> Callable[[], float]:
    """The clock TrainConfig.time_budget_s is counted on (TrainConfig.budget_clock)."""
    if kind == "wall":
        return time.monotonic
    if kind == "cpu":
        return lambda: time.process_time() / max(1, threads)
    raise ValueError(f"budget_clock must be 'wall' or 'cpu', not {kind!r}")


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
    soft_targets: np.ndarray | None = None,
) -> TrainedTextModel:
    """Fine-tune from ``config.base``; keep the weights of the best validation epoch.

    ``train_weights``: optional per-text sample weights (the loss of a batch is the weighted
    mean of its texts' cross-entropies); retraining weighs texts by where they came from.
    ``soft_targets``: a teacher's logits (texts, 2); each text's loss is then
    ``(1 - distill_weight) * cross-entropy + distill_weight * distillation`` (modelops.text.distill)."""
    torch.set_num_threads(config.threads)
    _seed_everything(config.seed)
    device = select_device(config.device)
    precision = select_precision(device, config.precision)
    model, tokenizer = load_base(config.base)
    to_device(model, device)
    _freeze(model, config)
    pad_id = tokenizer.pad_token_id or 0
    ids = encode(tokenizer, train_texts, config.max_length)
    lengths = [len(s) for s in ids]
    labels = torch.tensor(list(train_labels), dtype=torch.long)
    weights = None if train_weights is None else torch.tensor(list(train_weights), dtype=torch.float32)
    teacher = None if soft_targets is None else torch.as_tensor(np.asarray(soft_targets, dtype=np.float32))
    if teacher is not None and teacher.shape != (len(ids), 2):
        raise ValueError(f"soft_targets must be (texts, 2) = ({len(ids)}, 2), not {tuple(teacher.shape)}")
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
    # Disabled, the scaler passes the loss and the optimizer step through unchanged.
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
    log(f"fine-tune on {device} ({precision}), {len(ids)} texts, up to {total_steps} steps")

    result = TrainedTextModel(model=model, tokenizer=tokenizer, best_epoch=0, device=str(device), precision=precision)
    best_key: tuple[float, float] | None = None
    best_state: dict[str, torch.Tensor] | None = None
    step = 0
    started = time.monotonic()
    budget_now = budget_clock(config.budget_clock, config.threads)
    budget_started, last_epoch_cost = budget_now(), None
    bar = tqdm(total=total_steps, desc="fine-tune", unit="step", disable=not progress, mininterval=5.0)
    for epoch in range(1, config.epochs + 1):
        epoch_start, epoch_budget_start = time.monotonic(), budget_now()
        if config.time_budget_s is not None and last_epoch_cost is not None:
            used = epoch_budget_start - budget_started
            if used + last_epoch_cost > config.time_budget_s:
                unit = "s" if config.budget_clock == "wall" else " CPU s per thread"
                result.stopped_early = (
                    f"stopped before epoch {epoch}: {used:.0f}{unit} used, one more epoch would exceed the "
                    f"{config.time_budget_s:.0f}{unit} budget"
                )
                log(result.stopped_early)
                break
        model.train()
        loss_sum, seen = 0.0, 0
        for batch in bucketed_batches(lengths, config.batch_size, config.bucket_batches, rng):
            if config.max_steps is not None and step >= config.max_steps:
                break
            input_ids, mask = pad_batch([ids[i] for i in batch], pad_id)
            target = labels[batch].to(device)
            with autocast(device, precision):
                out = model(input_ids=input_ids.to(device), attention_mask=mask.to(device), labels=target)
                loss = out.loss
                if weights is not None or teacher is not None:
                    loss = _weighed_loss(
                        out.logits,
                        target,
                        None if weights is None else weights[batch].to(device),
                        None if teacher is None else teacher[batch].to(device),
                        config,
                    )
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)  # clip the true gradients, not the scaled ones
            torch.nn.utils.clip_grad_norm_([p for _, p in trainable], config.max_grad_norm)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            loss_sum += loss.item() * len(batch)
            seen += len(batch)
            step += 1
            bar.update(1)
            bar.set_postfix(epoch=epoch, loss=f"{loss_sum / seen:.4f}", refresh=False)
        train_seconds = time.monotonic() - epoch_start
        val_probs, val_loss = predict_proba(
            model,
            tokenizer,
            val_texts,
            max_length=config.max_length,
            batch_size=config.eval_batch_size,
            labels=val_labels,
        )
        val = spam_metrics(val_labels, val_probs)
        entry = EpochLog(epoch, loss_sum / max(1, seen), val_loss, val, time.monotonic() - epoch_start, seen)
        last_epoch_cost = budget_now() - epoch_budget_start
        result.history.append(entry)
        log(
            f"epoch {epoch}: train_loss={entry.train_loss:.4f} val_loss={val_loss:.4f} "
            f"val_f1={val['f1']:.4f} val_acc={val['accuracy']:.4f} ({entry.seconds:.0f}s, "
            f"{seen / max(train_seconds, 1e-9):.0f} samples/s training)"
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
    to_device(model, "cpu")
    model.eval()
    result.train_seconds = time.monotonic() - started
    return result
