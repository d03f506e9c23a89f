"""A shallower text model built from a trained deeper one (the teacher): a student of fewer
layers, started from the teacher's own weights and fine-tuned again.

Why: the transformer's CPU cost is nearly proportional to its layers, so a three-layer model
serves about twice the texts a core can score. Cut from the pre-trained base's lowest layers
and trained on the labels, a shallow model learns the training corpora's style more than the
deep one and calls more unseen benign writing spam. Started from every other layer of the
fine-tuned teacher (Sanh et al., DistilBERT, 2019, start their student the same way), it matched
the teacher on every served measure (docs/design.md, "How deep the text model is").

Two further terms are options, off by default because they measured worse there: the
teacher's probabilities as soft targets (``distillation_loss``; Hinton et al., "Distilling the
knowledge in a neural network", 2015) and word-shuffled copies of the training texts
(``shuffled_copies``; the augmentation step of TinyBERT's task distillation).

Hand-written: the loss is the two lines of ``distillation_loss``, and the layer copy is a state
dict filter; transformers has no distillation trainer for sequence classification, and the
maintained distillation libraries (TextBrewer) bring their own training loop, where this one
must keep the project's (modelops.text.finetune: budgets, devices, length bucketing).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from transformers import AutoConfig, AutoTokenizer, DistilBertForSequenceClassification

from modelops.text.batches import encode, length_sorted_batches, pad_batch

NOTE_FILE = "DISTILLED_FROM.json"


def parse_layers(value: str) -> tuple[int, ...]:
    """'0,2,4' -> (0, 2, 4); distinct, ascending layer indexes."""
    try:
        layers = tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError as exc:
        raise ValueError(f"student layers must be comma-separated integers, not {value!r}") from exc
    if not layers or list(layers) != sorted(set(layers)) or layers[0] < 0:
        raise ValueError(f"student layers must be distinct, ascending and non-negative, not {value!r}")
    return layers


def spaced_layers(count: int, depth: int) -> tuple[int, ...]:
    """``count`` of ``depth`` layers, evenly spaced from the lowest: 3 of 6 -> (0, 2, 4), 2 of 6 -> (0, 3)."""
    if not 1 <= count <= depth:
        raise ValueError(f"cannot keep {count} of {depth} layers")
    return tuple(i * depth // count for i in range(count))


def model_depth(checkpoint: str) -> int:
    """Transformer layers of a checkpoint (a local path or a hub id)."""
    config = AutoConfig.from_pretrained(checkpoint)
    return int(getattr(config, "n_layers", None) or config.num_hidden_layers)


def build_student(teacher_dir: Path, layers: Sequence[int], output_dir: Path) -> Path:
    """Write a checkpoint of the teacher's embeddings, its ``layers`` (in order) and its head.

    The head starts as the teacher's: the student's top layer feeds it features of the kind the
    teacher's top layer did only approximately, and training moves both together."""
    teacher = DistilBertForSequenceClassification.from_pretrained(teacher_dir)
    depth = teacher.config.n_layers
    if any(i >= depth for i in layers):
        raise ValueError(f"the teacher has {depth} layers; cannot keep {list(layers)}")
    config = teacher.config.__class__.from_dict(teacher.config.to_dict())
    config.n_layers = len(layers)
    student = DistilBertForSequenceClassification(config)
    renamed = {
        f"distilbert.transformer.layer.{old}.": f"distilbert.transformer.layer.{new}." for new, old in enumerate(layers)
    }
    state: dict[str, torch.Tensor] = {}
    for name, tensor in teacher.state_dict().items():
        if name.startswith("distilbert.transformer.layer."):
            prefix = ".".join(name.split(".")[:4]) + "."
            if prefix not in renamed:
                continue
            name = renamed[prefix] + name[len(prefix) :]
        state[name] = tensor.detach().clone()
    student.load_state_dict(state, strict=True)
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    student.save_pretrained(output_dir)
    AutoTokenizer.from_pretrained(teacher_dir).save_pretrained(output_dir)
    (output_dir / NOTE_FILE).write_text(
        json.dumps({"teacher": str(teacher_dir), "teacher_layers": depth, "layers": list(layers)}, indent=2) + "\n"
    )
    return output_dir


@torch.inference_mode()
def teacher_logits(
    model: DistilBertForSequenceClassification,
    tokenizer: object,
    texts: Sequence[str],
    *,
    max_length: int,
    batch_size: int = 64,
) -> np.ndarray:
    """The teacher's logits (texts, 2) in input order, fp32, truncated as training truncates."""
    model.eval()
    ids = encode(tokenizer, texts, max_length)  # type: ignore[arg-type]
    out = np.zeros((len(ids), 2), dtype=np.float32)
    for batch in length_sorted_batches([len(s) for s in ids], batch_size):
        input_ids, mask = pad_batch([ids[i] for i in batch], getattr(tokenizer, "pad_token_id", 0) or 0)
        out[batch] = model(input_ids=input_ids, attention_mask=mask).logits.float().numpy()
    return out


def distillation_loss(student_logits: torch.Tensor, teacher: torch.Tensor, temperature: float) -> torch.Tensor:
    """Per text: KL(teacher || student) at ``temperature``, times T² so that its gradient keeps
    the scale of the hard-label loss's whatever the temperature (Hinton et al.)."""
    log_student = torch.log_softmax(student_logits.float() / temperature, dim=-1)
    log_teacher = torch.log_softmax(teacher.float() / temperature, dim=-1)
    kl = (log_teacher.exp() * (log_teacher - log_student)).sum(dim=-1)
    return kl * temperature * temperature


def shuffled_copies(
    texts: Sequence[str], labels: Sequence[int], *, share: float, seed: int
) -> tuple[list[str], list[int]]:
    """Copies of a random ``share`` of the texts with their words in random order, each with its
    text's label (and the teacher's logits where the distillation term is weighed): text that is
    not fluent, for the student to learn (the augmentation step of task distillation; Jiao et
    al., TinyBERT, 2020). Texts of fewer than three words have no other order and are skipped."""
    rng = random.Random(seed)
    out_texts: list[str] = []
    out_labels: list[int] = []
    for text, label in zip(texts, labels, strict=True):
        words = text.split()
        if len(words) < 3 or rng.random() >= share:
            continue
        rng.shuffle(words)
        out_texts.append(" ".join(words))
        out_labels.append(label)
    return out_texts, out_labels
