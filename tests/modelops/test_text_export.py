"""ONNX export of a tiny random DistilBERT: I/O contract, parity with PyTorch, static INT8, batch invariance."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from django.core.management import call_command
from onnx import TensorProto
from pytest_django import Settings

from modelops.text.data import load_sms_splits
from modelops.text.export import (
    BATCH_INVARIANCE_TOLERANCE,
    OPSET,
    PARITY_TOLERANCE,
    ExportReport,
    load_torch_model,
    run_export,
)
from modelops.text.inference import (
    FP32_FILE,
    INT8_FILE,
    SERVING_FILE,
    OnnxTextClassifier,
    pad_ids,
    session_options,
)
from modelops.text.tiny import build_tiny_checkpoint
from modelops.text.train import TrainConfig, current_model_dir, read_metrics, run_training
from modelops.triton_configs import TEXT_DISABLED_OPTIMIZERS
from tests.modelops.test_text_train import small_splits

MAX_LENGTH = 64


@pytest.fixture(scope="module")
def texts() -> tuple[list[str], list[str], list[int]]:
    splits = load_sms_splits()
    return splits.train.texts[:64], splits.test.texts[:80], splits.test.labels[:80]


@pytest.fixture(scope="module")
def exported(
    tmp_path_factory: pytest.TempPathFactory, texts: tuple[list[str], list[str], list[int]]
) -> tuple[Path, ExportReport]:
    model_dir = build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-export"))
    calibration, eval_texts, eval_labels = texts
    report = run_export(
        model_dir,
        calibration_texts=calibration,
        eval_texts=eval_texts,
        eval_labels=eval_labels,
        max_length=MAX_LENGTH,
        latency_runs=5,
        measure_optimizer=False,
        threads=1,
    )
    return model_dir, report


def test_onnx_io_contract(exported: tuple[Path, ExportReport]) -> None:
    model = onnx.load(str(exported[0] / FP32_FILE))
    assert any(op.domain in ("", "ai.onnx") and op.version == OPSET for op in model.opset_import)
    inputs = {i.name: i.type.tensor_type for i in model.graph.input}
    assert list(inputs) == ["input_ids", "attention_mask"]
    for tensor in inputs.values():
        assert tensor.elem_type == TensorProto.INT64
        assert [d.dim_param for d in tensor.shape.dim] == ["batch", "sequence"]
    (output,) = model.graph.output
    assert output.name == "logits" and output.type.tensor_type.elem_type == TensorProto.FLOAT
    assert output.type.tensor_type.shape.dim[0].dim_param == "batch"
    assert output.type.tensor_type.shape.dim[1].dim_value == 2


@torch.inference_mode()
def test_onnx_runtime_matches_pytorch_on_padded_batches(
    exported: tuple[Path, ExportReport], texts: tuple[list[str], list[str], list[int]]
) -> None:
    model_dir, report = exported
    assert report.parity_max_abs_diff <= PARITY_TOLERANCE
    clf = OnnxTextClassifier(model_dir, file=FP32_FILE, max_length=MAX_LENGTH)
    torch_model = load_torch_model(model_dir)
    batch = pad_ids(clf.encode(texts[1][:12]), clf.pad_id)
    assert (batch["attention_mask"] == 0).any()
    expected = torch_model(
        input_ids=torch.from_numpy(batch["input_ids"]), attention_mask=torch.from_numpy(batch["attention_mask"])
    ).logits.numpy()
    np.testing.assert_allclose(clf.logits_for_ids(clf.encode(texts[1][:12])), expected, atol=PARITY_TOLERANCE)


def test_int8_model_is_statically_quantised(exported: tuple[Path, ExportReport]) -> None:
    ops = [node.op_type for node in onnx.load(str(exported[0] / INT8_FILE)).graph.node]
    assert "QuantizeLinear" in ops and "DequantizeLinear" in ops
    # Dynamic quantisation would insert these and compute scales from each batch.
    assert "DynamicQuantizeLinear" not in ops and "MatMulInteger" not in ops


@pytest.mark.parametrize("file", [INT8_FILE, FP32_FILE])
def test_score_does_not_depend_on_batch_composition(
    exported: tuple[Path, ExportReport], texts: tuple[list[str], list[str], list[int]], file: str
) -> None:
    sample = texts[1][:40]
    clf = OnnxTextClassifier(exported[0], file=file, max_length=MAX_LENGTH)
    alone = np.array([clf.predict_proba([t])[0] for t in sample])
    assert alone.std() > 0.01, "scores must vary for the comparison to mean anything"
    rng = np.random.default_rng(0)
    for batch_size in (3, 8, 40):
        order = rng.permutation(len(sample))
        ids = clf.encode([sample[i] for i in order])
        batched = np.concatenate([clf.logits_for_ids(ids[s : s + batch_size]) for s in range(0, len(ids), batch_size)])
        z = batched - batched.max(axis=1, keepdims=True)
        probs = np.exp(z[:, 1]) / np.exp(z).sum(axis=1)
        diff = np.abs(probs - alone[order]).max()
        assert diff <= BATCH_INVARIANCE_TOLERANCE, (batch_size, diff)
    assert exported[1].batch_invariance["int8" if file == INT8_FILE else "fp32"] <= BATCH_INVARIANCE_TOLERANCE


def test_int8_agrees_with_fp32_on_a_fixed_set(
    exported: tuple[Path, ExportReport], texts: tuple[list[str], list[str], list[int]]
) -> None:
    fp32 = OnnxTextClassifier(exported[0], file=FP32_FILE, max_length=MAX_LENGTH).predict_proba(texts[1])
    int8 = OnnxTextClassifier(exported[0], file=INT8_FILE, max_length=MAX_LENGTH).predict_proba(texts[1])
    assert np.abs(fp32 - int8).max() < 0.05
    assert ((fp32 >= 0.5) == (int8 >= 0.5)).mean() >= 0.9


def test_serving_file_is_recorded_and_used_by_default(exported: tuple[Path, ExportReport]) -> None:
    model_dir, report = exported
    serving = json.loads((model_dir / SERVING_FILE).read_text())
    assert serving["model_file"] == report.serve and (model_dir / serving["model_file"]).is_file()
    assert serving["pad_token_id"] == 0
    assert serving["max_length"] == MAX_LENGTH
    assert OnnxTextClassifier(model_dir).file == report.serve
    assert OnnxTextClassifier(model_dir).predict_proba([]).shape == (0,)


def test_export_command_updates_metrics_and_card(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = build_tiny_checkpoint(tmp_path / "base")
    text_dir = tmp_path / "artifacts" / "text"
    config = TrainConfig(base=str(base), epochs=1, batch_size=8, max_steps=1, threads=1, max_length=MAX_LENGTH)
    run_training(small_splits(), config, text_dir, version="v1", progress=False, log=lambda _: None)
    settings.ARTIFACTS_DIR = tmp_path / "artifacts"
    monkeypatch.setattr("modelops.management.commands.export_text_model.load_sms_splits", lambda seed: small_splits())

    args = ["--calibration-texts", "16", "--latency-runs", "3", "--threads", "1"]
    call_command("export_text_model", *args, stdout=StringIO())

    model_dir = current_model_dir(text_dir)
    metrics = read_metrics(model_dir)
    assert {"onnx_fp32", "onnx_int8"} <= set(metrics["test"])
    assert metrics["onnx"]["serve"] in (FP32_FILE, INT8_FILE)
    assert "onnxruntime.transformers.optimizer" in metrics["onnx"]["optimizer"]
    assert not (model_dir / "model.opt.onnx").exists()
    card = (model_dir / "MODEL_CARD.md").read_text()
    assert "ONNX int8" in card and "Serve `" in card

    # When the cheapest recipe lost too much, the card lists every recipe tried.
    from modelops.text.card import render_model_card

    tried = [{"recipe": f"recipe {i}", "f1_loss": 0.02 - i / 100, "batch_invariance": 0.0} for i in range(2)]
    card = render_model_card({**metrics, "onnx": {**metrics["onnx"], "int8_attempts": tried}})
    assert "recipe 0 (loses 2.00 points" in card and "recipe 1 (loses 1.00 points" in card


def test_weight_only_recipe_keeps_attention_matmuls_in_float(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from modelops.text.export import QuantRecipe, activation_matmuls, export_onnx, quantize_int8

    model_dir = build_tiny_checkpoint(tmp_path / "m")
    fp32 = export_onnx(model_dir, tmp_path / "m" / FP32_FILE)
    attention = activation_matmuls(onnx.load(str(fp32)))
    assert len(attention) == 4  # Q.K^T and P.V in each of the 2 layers
    out = quantize_int8(
        fp32,
        tmp_path / "w.onnx",
        tokenizer=AutoTokenizer.from_pretrained(model_dir),
        calibration_texts=["free prize call now", "see you at lunch", "ok"],
        max_length=MAX_LENGTH,
        recipe=QuantRecipe(weight_matmuls_only=True, exclude_name_parts=("/classifier/",)),
    )
    graph = onnx.load(str(out)).graph
    produced_by = {o: n.op_type for n in graph.node for o in n.output}
    for node in graph.node:
        if node.name in attention:
            assert all(produced_by.get(i) != "DequantizeLinear" for i in node.input), node.name
        if node.op_type == "Gemm" and "/classifier/" in node.name:
            assert produced_by.get(node.input[0]) != "DequantizeLinear"
    assert any(n.op_type == "DequantizeLinear" for n in graph.node)


def _optimized_op_types(model: Path, options: ort.SessionOptions, out: Path) -> set[str]:
    options.optimized_model_filepath = str(out)
    ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
    return {node.op_type for node in onnx.load(str(out)).graph.node}


def test_evaluation_sessions_leave_the_slow_fusions_off(exported: tuple[Path, ExportReport], tmp_path: Path) -> None:
    """The evaluation session runs the graph serving runs: ORT's default options fuse
    Add + LayerNormalization into SkipLayerNormalization (slower on CPU, slightly different
    scores); session_options, like text_classifier's DISABLED_OPTIMIZERS, leaves it unfused."""
    model = exported[0] / INT8_FILE  # the served export (fp32's fusions differ and keep no SkipLN)
    default = _optimized_op_types(model, ort.SessionOptions(), tmp_path / "default.onnx")
    ours = _optimized_op_types(model, session_options(threads=1), tmp_path / "ours.onnx")
    assert "SkipLayerNormalization" in default  # the check below can fail
    assert "SkipLayerNormalization" not in ours
    assert "LayerNormalization" in ours
    assert set(TEXT_DISABLED_OPTIMIZERS) == {"SkipLayerNormFusion"}


def test_the_second_rung_keeps_the_low_layers_feed_forward_output_in_float(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from modelops.text.export import INT8_LADDER, export_onnx, quantize_int8

    model_dir = build_tiny_checkpoint(tmp_path / "m")
    fp32 = export_onnx(model_dir, tmp_path / "m" / FP32_FILE)
    out = quantize_int8(
        fp32,
        tmp_path / "lin2.onnx",
        tokenizer=AutoTokenizer.from_pretrained(model_dir),
        calibration_texts=["free prize call now", "see you at lunch", "ok"],
        max_length=MAX_LENGTH,
        recipe=INT8_LADDER[1],
    )
    graph = onnx.load(str(out)).graph
    produced_by = {o: n.op_type for n in graph.node for o in n.output}
    lin2 = [n for n in graph.node if n.op_type == "MatMul" and "/ffn/lin2/" in n.name]
    assert {n.name.split("/layer.")[1][0] for n in lin2} == {"0", "1"}  # the tiny model's two layers
    for node in lin2:
        assert all(produced_by.get(i) != "DequantizeLinear" for i in node.input), node.name
    lin1 = [n for n in graph.node if n.op_type == "MatMul" and "/ffn/lin1/" in n.name]
    assert lin1 and all(any(produced_by.get(i) == "DequantizeLinear" for i in n.input) for n in lin1)


def _export_tiny(model_dir: Path, texts: tuple[list[str], list[str], list[int]], **options: Any) -> ExportReport:
    calibration, eval_texts, eval_labels = texts
    return run_export(
        model_dir,
        calibration_texts=calibration,
        eval_texts=eval_texts,
        eval_labels=eval_labels,
        max_length=MAX_LENGTH,
        latency_runs=2,
        measure_optimizer=False,
        threads=1,
        **options,
    )


def test_export_tries_the_ladder_until_a_recipe_keeps_f1(
    tmp_path: Path, texts: tuple[list[str], list[str], list[int]]
) -> None:
    """No recipe can lose less than nothing: both are tried, recorded, and fp32 is served."""
    from modelops.text.export import INT8_LADDER

    model_dir = build_tiny_checkpoint(tmp_path / "m")
    report = _export_tiny(model_dir, texts, max_int8_f1_loss=-1.0)
    attempts = report.details["int8_attempts"]
    assert [a["recipe"] for a in attempts] == [r.describe() for r in INT8_LADDER]
    assert report.serve == FP32_FILE

    report = _export_tiny(model_dir, texts, max_int8_f1_loss=1.0)
    assert len(report.details["int8_attempts"]) == 1 and report.serve == INT8_FILE
    assert INT8_LADDER[0].describe() in report.serve_reason


def test_the_second_recipe_is_served_when_the_first_fails(
    tmp_path: Path, texts: tuple[list[str], list[str], list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from modelops.text import export
    from modelops.text.export import INT8_LADDER, LOW_LAYERS_LIN2_FLOAT

    real = export.batch_invariance_max_diff
    calls: list[str] = []

    def first_int8_not_invariant(classifier: OnnxTextClassifier, probe: list[str], **kwargs: Any) -> float:
        calls.append(classifier.file)
        return 1.0 if len(calls) == 1 else real(classifier, probe, **kwargs)

    monkeypatch.setattr(export, "batch_invariance_max_diff", first_int8_not_invariant)
    report = _export_tiny(build_tiny_checkpoint(tmp_path / "m"), texts, max_int8_f1_loss=1.0)
    assert report.details["int8_attempts"][0]["batch_invariance"] == 1.0
    assert len(report.details["int8_attempts"]) == len(INT8_LADDER) == 2
    assert report.serve == INT8_FILE
    assert LOW_LAYERS_LIN2_FLOAT.describe() in report.serve_reason
    assert LOW_LAYERS_LIN2_FLOAT.describe() in report.details["quantization"]


def test_a_recipe_that_names_no_node_is_refused(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from modelops.text.export import QuantRecipe, export_onnx, quantize_int8

    model_dir = build_tiny_checkpoint(tmp_path / "m")
    fp32 = export_onnx(model_dir, tmp_path / "m" / FP32_FILE)
    with pytest.raises(ValueError, match="no MatMul/Gemm node matches"):
        quantize_int8(
            fp32,
            tmp_path / "x.onnx",
            tokenizer=AutoTokenizer.from_pretrained(model_dir),
            calibration_texts=["ok"],
            max_length=MAX_LENGTH,
            recipe=QuantRecipe(exclude_name_parts=("layer.9/ffn/lin2/",)),
        )
