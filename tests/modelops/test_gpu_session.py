"""The GPU session runs on a stock PyTorch image: a subprocess that cannot import scikit-learn,
SciPy, onnx or Django fine-tunes, exports and checks a tiny model on the CPU, skipping the CUDA parts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from modelops.text.data import save_splits
from modelops.text.finetune import load_base
from modelops.text.tiny import build_tiny_checkpoint
from tests.modelops.test_text_train import small_splits

ROOT = Path(__file__).resolve().parents[2]
ABSENT_ON_THE_GPU_IMAGE = ("sklearn", "scipy", "joblib", "onnx", "onnxscript", "django")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only path")
def test_smoke_run_without_the_project_dependencies(tmp_path: Path) -> None:
    carry = tmp_path / "carry"
    model, tokenizer = load_base(str(build_tiny_checkpoint(tmp_path / "tiny")))
    model.half().save_pretrained(carry / "base")  # prepare stores the base in fp16
    tokenizer.save_pretrained(carry / "base")
    save_splits(small_splits(n_train=64, n_eval=64), carry / "sms_splits.json")
    blocker = tmp_path / "site"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        f"import sys\nfor name in {ABSENT_ON_THE_GPU_IMAGE!r}:\n    sys.modules[name] = None\n"
    )
    out = tmp_path / "out"

    run = subprocess.run(
        [
            *(sys.executable, "scripts/gpu_session.py", "run", "--smoke", "--carry", str(carry)),
            *("--work", str(tmp_path), "--student-layers", "0,1"),  # the tiny model has two layers
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(blocker), "OUT": str(out)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    trained = json.loads((out / "train.json").read_text())
    assert list(trained) == ["fp32", "student-0-1"] and trained["fp32"]["device"] == "cpu"
    assert trained["fp32"]["samples"] > 0 and 0.0 <= trained["fp32"]["test"]["f1"] <= 1.0
    student = trained["student-0-1"]
    assert student["samples"] > 0 and student["base"].endswith("student-0-1-base")
    student_check = json.loads((out / "gpu_check_student" / "gpu_check.json").read_text())
    assert student_check["parity"]["PyTorch fp32 (CPU)"]["argmax_agreement"] == 1.0
    check = json.loads((out / "gpu_check" / "gpu_check.json").read_text())
    assert "modelops.text.export did not import" in check["onnx_export"]  # onnx was absent: the fallback ran
    assert check["reference"] == "ONNX Runtime fp32 (CPU)"
    assert check["parity"]["PyTorch fp32 (CPU)"]["max_abs_logit_diff"] < 1e-4
    assert check["parity"]["PyTorch fp32 (CPU)"]["argmax_agreement"] == 1.0
    assert "no CUDA GPU" in check["skipped"] and "throughput" not in check
    assert "| PyTorch fp32 (CPU) |" in (out / "SUMMARY.md").read_text()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only path")
def test_a_student_that_cannot_be_built_fails_the_session(tmp_path: Path) -> None:
    carry = tmp_path / "carry"
    model, tokenizer = load_base(str(build_tiny_checkpoint(tmp_path / "tiny")))
    model.save_pretrained(carry / "base")
    tokenizer.save_pretrained(carry / "base")
    save_splits(small_splits(n_train=64, n_eval=64), carry / "sms_splits.json")

    run = subprocess.run(
        [
            *(sys.executable, "scripts/gpu_session.py", "run", "--smoke", "--carry", str(carry)),
            *("--work", str(tmp_path), "--student-layers", "0,5"),  # no layer 5 in a two-layer model
        ],
        cwd=ROOT,
        env={**os.environ, "OUT": str(tmp_path / "out")},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    trained = json.loads((tmp_path / "out" / "train.json").read_text())
    assert "error" in trained["student-0-5"] and "error" not in trained["fp32"]
    assert (tmp_path / "out" / "gpu_check" / "gpu_check.json").is_file()  # the teacher was still checked


def test_graphable_forward_equals_the_transformers_forward(tmp_path: Path) -> None:
    from benchmarks.gpu_check import graphable_parity, load_model, make_batches

    tiny = build_tiny_checkpoint(tmp_path / "tiny", seed=3)
    model = load_model(tiny, "eager")
    _, tokenizer = load_base(str(tiny))
    texts = small_splits(n_train=8, n_eval=24).test.texts  # mixed lengths: padded batches

    assert graphable_parity(model, make_batches(tokenizer, texts, 128, 8)) < 1e-5
    assert graphable_parity(load_model(tiny, "sdpa"), make_batches(tokenizer, texts, 128, 8)) < 1e-5
