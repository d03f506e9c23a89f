"""Fine-tune the text model on a GPU and check it there, in one run on a machine that has only a
stock PyTorch image (torch, transformers, numpy, onnxruntime) and a copy of this working tree.

Two steps:

    python scripts/gpu_session.py prepare          # here, with the project's environment
    python scripts/gpu_session.py run --out DIR    # on the GPU machine, from the repository root

``prepare`` writes var/gpu_carry/ (about 45 MiB, the folder to copy along with the tree):
- base/: the DistilBERT base checkpoint that training starts from (modelops.text.convert), its
  weights stored in fp16 to halve the copy (training loads them as fp32, modelops.text.finetune);
- sms_splits.json: the SMS train/validation/test split as modelops.text.data makes it (that
  needs scikit-learn and the data package, which the GPU machine lacks).

``run`` prints the versions and nvidia-smi, fine-tunes from base/ on the train split once per
precision (--precisions, default bf16, fp16 and fp32: seconds each on a data-centre GPU), logging
samples/s and the test-split F1. From the fp32 checkpoint (the teacher; the first precision that
trained if fp32 did not) it builds the served-depth model as the bootstrap does (--student-layers,
default 0,2,4) and fine-tunes that too. Then it runs benchmarks/gpu_check.py on the student and
on the teacher. Everything it reports goes to --out: train.json, gpu_check_student/, gpu_check/,
logs, SUMMARY.md. It exits non-zero when no precision trained, the student failed or a check did.
--smoke shrinks every step (a few optimizer steps, 64 test texts, two batch sizes) to prove the
path on a CPU in a minute or two.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CARRY = ROOT / "var" / "gpu_carry"
WORK = ROOT / "var" / "gpu_run"
SPLITS_FILE = "sms_splits.json"


def prepare(carry: Path) -> None:
    import torch
    from transformers import AutoTokenizer, DistilBertForSequenceClassification

    from modelops.text.convert import NOTE_FILE, build_base_checkpoint
    from modelops.text.data import load_sms_splits, save_splits

    if carry.exists():
        shutil.rmtree(carry)
    (carry / "base").mkdir(parents=True)
    with tempfile.TemporaryDirectory() as scratch:
        built = build_base_checkpoint(Path(scratch) / "base").output_dir
        model = DistilBertForSequenceClassification.from_pretrained(built)
        model.to(torch.float16).save_pretrained(carry / "base")
        AutoTokenizer.from_pretrained(built).save_pretrained(carry / "base")
        shutil.copy2(built / NOTE_FILE, carry / "base" / NOTE_FILE)
    save_splits(load_sms_splits(), carry / SPLITS_FILE)
    size = sum(f.stat().st_size for f in carry.rglob("*") if f.is_file())
    print(f"{carry}: {size / 2**20:.1f} MiB")


def environment() -> str:
    import numpy
    import onnxruntime
    import torch
    import transformers

    lines = [
        f"python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
        f"transformers {transformers.__version__}, onnxruntime {onnxruntime.__version__}, numpy {numpy.__version__}",
        f"cuda available: {torch.cuda.is_available()}"
        + (f", {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""),
        f"cpu count: {os.cpu_count()}",
    ]
    try:
        smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=60, check=False).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        smi = f"nvidia-smi: {exc}"
    return "\n".join([*lines, smi])


def train_once(
    args: argparse.Namespace, precision: str, out_model: Path, freeze_layers: int = 0, base: Path | None = None
) -> dict[str, Any]:
    import torch

    from modelops.text.data import TextSplit, read_splits
    from modelops.text.finetune import TrainConfig, predict_proba, select_device, to_device, train_text_model
    from modelops.text.metrics import spam_metrics

    splits = read_splits(args.carry / SPLITS_FILE)
    train, val, test = splits.train, splits.validation, splits.test
    if args.smoke:
        train, val, test = (TextSplit(s.texts[:64], s.labels[:64]) for s in (train, val, test))
    config = TrainConfig(
        base=str(base or args.carry / "base"),
        epochs=args.epochs,
        threads=os.cpu_count() or 2,
        max_steps=3 if args.smoke else None,
        time_budget_s=None,
        device="auto",
        precision=precision,  # fp32 on a CPU whatever is asked
        freeze_layers=freeze_layers,
    )
    trained = train_text_model(
        train.texts, train.labels, val.texts, val.labels, config, progress=False, log=lambda m: print(m, flush=True)
    )
    device = select_device(config.device)
    to_device(trained.model, device)
    started = time.monotonic()
    probs, _ = predict_proba(trained.model, trained.tokenizer, test.texts, max_length=config.max_length)
    test_seconds = time.monotonic() - started
    to_device(trained.model, "cpu")
    trained.model.save_pretrained(out_model)
    trained.tokenizer.save_pretrained(out_model)
    samples = sum(h.samples for h in trained.history)
    report: dict[str, Any] = {
        "device": trained.device,
        "gpu": torch.cuda.get_device_name(0) if device.type == "cuda" else None,
        "precision": trained.precision,
        "freeze_layers": freeze_layers,
        "base": str(base or args.carry / "base"),
        "epochs": len(trained.history),
        "best_epoch": trained.best_epoch,
        "train_texts": len(train),
        "samples": samples,
        "seconds": round(trained.train_seconds, 2),
        "samples_per_s": round(samples / trained.train_seconds, 1),
        "history": [vars(h) for h in trained.history],
        "test": spam_metrics(test.labels, probs),
        "test_inference_seconds": round(test_seconds, 3),
        "checkpoint": str(out_model),
    }
    print(
        f"{precision}: {samples} samples in {trained.train_seconds:.1f}s ({report['samples_per_s']} samples/s, "
        f"validation included), test F1 {report['test']['f1']:.4f}",
        flush=True,
    )
    return report


def student_run(args: argparse.Namespace, teacher: Path, runs: dict[str, Any]) -> Path | None:
    """Build the served-depth model from the teacher as the bootstrap does
    (modelops.text.distill.build_student: the teacher's embeddings, the chosen layers and its
    head) and fine-tune it on the same split; records the run under "student-<layers>"."""
    from modelops.text.distill import build_student, parse_layers

    key = "student-" + args.student_layers.replace(",", "-")
    try:
        started = time.monotonic()
        base = build_student(teacher, parse_layers(args.student_layers), args.work / f"{key}-base")
        built_s = time.monotonic() - started
        runs[key] = train_once(args, "fp32", args.work / f"model-{key}", base=base)
        runs[key]["build_seconds"] = round(built_s, 2)
        return args.work / f"model-{key}"
    except Exception as exc:  # the teacher's check still runs
        runs[key] = {"error": f"{type(exc).__name__}: {exc}"}
        print(f"{key}: failed: {runs[key]['error']}", flush=True)
        return None


def gpu_check(args: argparse.Namespace, model_dir: Path, out: Path) -> int:
    check = [sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--model-dir", str(model_dir)]
    check += ["--splits", str(args.carry / SPLITS_FILE), "--out", str(out)]
    if args.smoke:
        check += ["--limit", "64", "--batch-sizes", "1,8", "--seq-lengths", "32", "--iters", "3"]
    print("$ " + " ".join(check), flush=True)
    return subprocess.run(check, check=False).returncode


def run(args: argparse.Namespace) -> int:
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    env = environment()
    print(env, flush=True)
    (out / "environment.txt").write_text(env + "\n")

    import torch

    precisions = args.precisions if torch.cuda.is_available() else ["fp32"]
    # (report key, precision, frozen layers); the last is an adaptation round's fine-tune.
    trainings = [(p, p, 0) for p in precisions]
    if args.freeze_layers:
        trainings.append((f"fp32-freeze{args.freeze_layers}", "fp32", args.freeze_layers))
    runs: dict[str, Any] = {}
    for key, precision, frozen in trainings:
        try:
            runs[key] = train_once(args, precision, args.work / f"model-{key}", freeze_layers=frozen)
        except Exception as exc:  # the other trainings and the check still run
            runs[key] = {"error": f"{type(exc).__name__}: {exc}"}
            print(f"{key}: training failed: {runs[key]['error']}", flush=True)
        (out / "train.json").write_text(json.dumps(runs, indent=2, default=str) + "\n")

    trained = [p for p in precisions if "error" not in runs[p]]
    # The teacher is the fp32 fine-tune where it trained (the bootstrap distils from fp32 weights),
    # else the first precision that did.
    teacher = "fp32" if "fp32" in trained else (trained[0] if trained else None)
    model_dir = args.work / f"model-{teacher}" if teacher else args.carry / "base"
    checked = [("gpu_check", model_dir)]
    student_failed = False
    if args.student_layers and trained:
        student = student_run(args, model_dir, runs)
        (out / "train.json").write_text(json.dumps(runs, indent=2, default=str) + "\n")
        student_failed = student is None
        if student is not None:  # the served depth first: it is what the GPU profile serves
            checked.insert(0, ("gpu_check_student", student))
    # Any failure fails the session: a check killed by a signal returns a negative code.
    codes = [gpu_check(args, checkpoint, out / folder) for folder, checkpoint in checked]  # every check runs
    failed = student_failed or any(code != 0 for code in codes)

    summary = [f"# GPU session ({time.monotonic() - started:.0f}s)", "", "```", env, "```", "", "## Fine-tune", ""]
    summary += ["| precision | device | samples/s | seconds | epochs | test F1 |", "|---|---|---|---|---|---|"]
    for precision, row in runs.items():
        if "error" in row:
            summary.append(f"| {precision} | failed: {row['error']} | | | | |")
        else:
            summary.append(
                f"| {precision} | {row['gpu'] or row['device']} | {row['samples_per_s']} | {row['seconds']} "
                f"| {row['epochs']} | {row['test']['f1']:.4f} |"
            )
    for folder, checkpoint in checked:
        check_md = out / folder / "gpu_check.md"
        summary += ["", f"## Check of {checkpoint.name}", ""]
        summary.append(check_md.read_text() if check_md.is_file() else "gpu_check.py wrote no report")
    (out / "SUMMARY.md").write_text("\n".join(summary) + "\n")
    print(f"done in {time.monotonic() - started:.0f}s; reports in {out}", flush=True)
    return 1 if failed or not trained else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="step", required=True)
    prep = sub.add_parser("prepare", help="write var/gpu_carry/ (run with the project's environment)")
    prep.add_argument("--carry", type=Path, default=CARRY)
    go = sub.add_parser("run", help="fine-tune and check on this machine's GPU")
    go.add_argument("--out", type=Path, default=Path(os.environ["OUT"]) if os.environ.get("OUT") else None)
    go.add_argument("--carry", type=Path, default=CARRY)
    go.add_argument("--work", type=Path, default=WORK, help="where the fine-tuned checkpoints go")
    go.add_argument("--epochs", type=int, default=2)
    go.add_argument("--precisions", type=lambda v: v.split(","), default=["bf16", "fp16", "fp32"])
    go.add_argument(
        "--freeze-layers",
        type=int,
        default=0,
        help="also one fp32 fine-tune with the lowest N layers frozen (negative: all but the top N)",
    )
    go.add_argument(
        "--student-layers",
        default="0,2,4",
        help="also build the served three-layer model from the teacher's layers (the fp32 fine-tune, else the "
        "first precision that trained) and fine-tune and check it ('' to skip)",
    )
    go.add_argument("--smoke", action="store_true", help="a few steps on a few texts: proves the path on a CPU")
    args = parser.parse_args()
    if args.step == "prepare":
        prepare(args.carry)
        return
    if args.out is None:
        parser.error("run needs --out or $OUT")
    sys.exit(run(args))


if __name__ == "__main__":
    main()
