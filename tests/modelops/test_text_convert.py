"""The converted DistilBERT computes the same hidden states as the packaged BERT encoder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from django.core.management import call_command
from transformers import BertModel, BertTokenizerFast, DistilBertModel, DistilBertTokenizerFast

from modelops.text.convert import (
    NOTE_FILE,
    ConversionError,
    build_base_checkpoint,
    checkpoint_layers,
    describe_base,
    packaged_bert_dir,
)

SENTENCES = [
    "WINNER!! You have been selected to receive a £900 prize reward! Call 09061701461 now.",
    "Ok lar... joking wif u oni...",
    "Are we still meeting for lunch tomorrow at the usual place? Let me know if anything changes.",
    "hi",
]


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("base")
    build_base_checkpoint(out)
    return out


def test_hidden_states_match_bert_with_padding(converted: Path) -> None:
    source = packaged_bert_dir()
    bert = BertModel.from_pretrained(source, add_pooling_layer=False).eval()
    distil = DistilBertModel.from_pretrained(converted).eval()
    bert_tok = BertTokenizerFast.from_pretrained(source)
    distil_tok = DistilBertTokenizerFast.from_pretrained(converted)

    bert_batch = bert_tok(SENTENCES, padding=True, return_tensors="pt")
    distil_batch = distil_tok(SENTENCES, padding=True, return_tensors="pt")
    assert torch.equal(bert_batch["input_ids"], distil_batch["input_ids"])
    assert "token_type_ids" not in distil_batch
    assert bool((distil_batch["attention_mask"] == 0).any()), "the batch must contain padding"

    with torch.no_grad():
        expected = bert(**bert_batch).last_hidden_state
        actual = distil(**distil_batch).last_hidden_state
    mask = distil_batch["attention_mask"].bool()
    # Padded positions are never read downstream; compare the real tokens.
    diff = (expected[mask] - actual[mask]).abs().max().item()
    assert diff < 1e-5, diff


def test_checkpoint_records_its_base_and_labels(converted: Path) -> None:
    note = json.loads((converted / NOTE_FILE).read_text())
    assert "all-MiniLM-L6-v2" in note["base"]
    assert note["verified_max_abs_diff_last_hidden_state"] < 1e-5
    assert "all-MiniLM-L6-v2" in describe_base(str(converted))
    config = json.loads((converted / "config.json").read_text())
    assert config["model_type"] == "distilbert"
    assert (config["dim"], config["n_layers"], config["n_heads"], config["hidden_dim"]) == (384, 6, 12, 1536)
    assert config["id2label"] == {"0": "ham", "1": "spam"}


def test_command_skips_existing_checkpoint(converted: Path) -> None:
    from io import StringIO

    out = StringIO()
    call_command("build_base_checkpoint", "--output", str(converted), stdout=out)
    assert "already" in out.getvalue()


def test_a_shallower_base_keeps_the_lowest_layers(tmp_path: Path) -> None:
    """Two layers kept: the converted model computes BERT's hidden states after its second layer."""
    out = build_base_checkpoint(tmp_path / "two", layers=2).output_dir
    assert checkpoint_layers(out) == 2
    source = packaged_bert_dir()
    bert = BertModel.from_pretrained(source, add_pooling_layer=False).eval()
    distil = DistilBertModel.from_pretrained(out).eval()
    batch = DistilBertTokenizerFast.from_pretrained(out)(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = bert(**batch, output_hidden_states=True).hidden_states
        actual = distil(**batch).last_hidden_state
    mask = batch["attention_mask"].bool()
    assert (hidden[2][mask] - actual[mask]).abs().max().item() < 1e-5
    assert (hidden[6][mask] - actual[mask]).abs().max().item() > 0.1  # not the full encoder's output
    assert json.loads((out / NOTE_FILE).read_text())["layers"] == "2 of 6 (the lowest)"


def test_the_base_is_built_whole_and_a_cut_one_is_rebuilt(tmp_path: Path, settings) -> None:
    """A shallower served model is distilled from a full-depth one, so the base is always whole;
    a base cut to fewer layers (--layers, or an earlier release's TEXT_MODEL_LAYERS) is built again."""
    from io import StringIO

    from modelops.management.commands.bootstrap_models import base_checkpoint_exists

    base = tmp_path / "base"
    settings.TEXT_MODEL_BASE = str(base)
    settings.TEXT_MODEL_LAYERS = 3
    call_command("build_base_checkpoint", "--layers", "2", stdout=StringIO())
    assert checkpoint_layers(base) == 2 and not base_checkpoint_exists()
    out = StringIO()
    call_command("build_base_checkpoint", stdout=out)
    assert "6 layers" in out.getvalue() and checkpoint_layers(base) == 6 and base_checkpoint_exists()


def test_depth_out_of_range_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConversionError, match=r"layers must be 1\.\.6"):
        build_base_checkpoint(tmp_path / "deep", layers=7)


def test_an_operators_own_base_is_kept_whatever_its_depth(tmp_path: Path, settings) -> None:
    from io import StringIO

    from modelops.management.commands.bootstrap_models import base_checkpoint_exists

    base = tmp_path / "own"
    base.mkdir()
    (base / "config.json").write_text(json.dumps({"model_type": "bert", "num_hidden_layers": 12}))
    settings.TEXT_MODEL_BASE = str(base)
    settings.TEXT_MODEL_LAYERS = 3
    assert checkpoint_layers(base) is None and base_checkpoint_exists()
    out = StringIO()
    call_command("build_base_checkpoint", stdout=out)
    assert "already" in out.getvalue()
    assert json.loads((base / "config.json").read_text())["num_hidden_layers"] == 12


def test_bootstrap_says_when_the_trained_model_has_another_depth(tmp_path: Path, settings) -> None:
    from modelops.management.commands.bootstrap_models import trained_depth_differs

    current = tmp_path / "text" / "current"
    current.mkdir(parents=True)
    (current / "config.json").write_text(json.dumps({"n_layers": 6}))
    settings.ARTIFACTS_DIR = tmp_path
    settings.TEXT_MODEL_LAYERS = 6
    assert trained_depth_differs() is None
    settings.TEXT_MODEL_LAYERS = 3
    assert trained_depth_differs() == 6
