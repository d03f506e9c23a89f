"""GPU check of the text model: parity with the CPU ONNX model, and throughput per batch size.

For an operator sizing GPU nodes. One run:
1. loads a trained text checkpoint (the Hugging Face directory the export step turns into ONNX)
   and the SMS test split (--splits FILE written by modelops.text.data.save_splits, or the
   project's own split when its data dependencies are installed);
2. exports the fp32 ONNX model as the export step does (modelops.text.export.export_onnx where
   it imports; a stock PyTorch image lacks the onnx package it needs, so there it calls
   torch.onnx.export with the same arguments) and runs the split through it on the CPU;
3. runs the same padded batches through PyTorch on CUDA in fp32, fp16 and bf16 and reports, against
   the ONNX logits: max |delta logit|, argmax agreement, and the F1 of the spam class at 0.5 (the
   transformer alone, before the lexical blend);
4. measures fp16 latency and texts/s per batch size at 128 and 32 tokens, eager and captured as a
   CUDA graph (static input buffers, warm-up on a side stream, replayed): eager PyTorch waits on
   kernel launches at small batches, a graph launches the whole forward at once as TensorRT does;
5. writes gpu_check.json and gpu_check.md to --out (the JSON after every step, so a crash keeps
   what finished).

Without a GPU it runs steps 1-2, compares ONNX with PyTorch fp32 on the CPU instead, and says the
CUDA parts were skipped. It imports only torch, transformers, numpy, onnxruntime and project
modules that need nothing else, so it runs on a GPU node's stock PyTorch image.

Usage:
    python benchmarks/gpu_check.py --model-dir var/models/text/current --out benchmarks/results/gpu
    python benchmarks/gpu_check.py --model-dir DIR --splits var/gpu_carry/sms_splits.json --out DIR --limit 64
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoTokenizer, DistilBertForSequenceClassification  # noqa: E402

from modelops.text.batches import encode, length_sorted_batches, pad_batch  # noqa: E402
from modelops.text.data import read_splits  # noqa: E402
from modelops.text.finetune import to_device  # noqa: E402
from modelops.text.metrics import spam_metrics  # noqa: E402

# What modelops.text.inference serves and modelops.text.export writes (opset 17, TorchScript exporter).
INPUT_NAMES = ("input_ids", "attention_mask")
OUTPUT_NAME = "logits"
OPSET = 17
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


@dataclass(frozen=True)
class Batch:
    rows: list[int]  # positions in the test split
    input_ids: torch.Tensor
    attention_mask: torch.Tensor


def load_test_split(splits: Path | None, limit: int | None) -> tuple[list[str], list[int], str]:
    if splits is not None:
        split = read_splits(splits)
    else:
        from modelops.text.data import load_sms_splits  # needs scikit-learn and the data package

        split = load_sms_splits()
    texts, labels = split.test.texts, split.test.labels
    if limit is not None:
        texts, labels = texts[:limit], labels[:limit]
    return texts, labels, split.fingerprint()


def make_batches(tokenizer: Any, texts: Sequence[str], max_length: int, batch_size: int) -> list[Batch]:
    """Length-sorted batches padded to their own longest text: every contender sees the same tensors."""
    ids = encode(tokenizer, texts, max_length)
    out = []
    for rows in length_sorted_batches([len(s) for s in ids], batch_size):
        input_ids, mask = pad_batch([ids[i] for i in rows], tokenizer.pad_token_id or 0)
        out.append(Batch(rows, input_ids, mask))
    return out


class _LogitsOnly(torch.nn.Module):
    def __init__(self, model: DistilBertForSequenceClassification) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.model(input_ids=input_ids, attention_mask=attention_mask).logits
        return logits


def export_fp32_onnx(model_dir: Path, output: Path) -> str:
    """The served fp32 ONNX model; returns how it was exported."""
    try:
        from modelops.text.export import export_onnx
    except ImportError as exc:
        reason = f"modelops.text.export did not import ({type(exc).__name__}: {exc})"
    else:
        export_onnx(model_dir, output)
        return "modelops.text.export.export_onnx"
    try:
        _torch_export(model_dir, output)
        return f"torch.onnx.export with the export step's arguments; {reason}"
    except Exception:  # torch without the onnx package fails in the onnxscript-function pass
        with _no_onnxscript_function_pass():
            _torch_export(model_dir, output)
        return (
            f"torch.onnx.export with the export step's arguments, without its onnxscript-function pass "
            f"(needs the onnx package; this model has no such functions); {reason}"
        )


def _torch_export(model_dir: Path, output: Path) -> None:
    model = load_model(model_dir, "eager")  # eager attention: what the export step exports
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    sample = make_batches(tokenizer, ["a short one", "a somewhat longer example message to pad the other"], 64, 2)[0]
    torch.onnx.export(
        _LogitsOnly(model),
        (sample.input_ids, sample.attention_mask),
        str(output),
        input_names=list(INPUT_NAMES),
        output_names=[OUTPUT_NAME],
        dynamic_axes={
            "input_ids": {0: "batch", 1: "sequence"},
            "attention_mask": {0: "batch", 1: "sequence"},
            OUTPUT_NAME: {0: "batch"},
        },
        opset_version=OPSET,
        do_constant_folding=True,
        dynamo=False,
    )


@contextmanager
def _no_onnxscript_function_pass() -> Iterator[None]:
    """Skip the TorchScript exporter's last pass, which parses the model with the onnx package only to
    insert onnxscript custom functions. A stock PyTorch image has no onnx package; ONNX Runtime, which
    runs the result, does not need it."""
    for name in ("torch.onnx._internal.torchscript_exporter.onnx_proto_utils", "torch.onnx._internal.onnx_proto_utils"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "_add_onnxscript_fn"):
            break
    else:
        raise RuntimeError("this torch has no onnxscript-function pass to skip")
    original = module._add_onnxscript_fn
    module._add_onnxscript_fn = lambda model_bytes, custom_opsets: model_bytes  # type: ignore[attr-defined]
    try:
        yield
    finally:
        module._add_onnxscript_fn = original  # type: ignore[attr-defined]


def onnx_logits(path: Path, batches: Sequence[Batch], n: int) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    logits = np.zeros((n, 2), dtype=np.float32)
    for batch in batches:
        feeds = {"input_ids": batch.input_ids.numpy(), "attention_mask": batch.attention_mask.numpy()}
        logits[batch.rows] = session.run([OUTPUT_NAME], feeds)[0]
    return logits


@torch.inference_mode()
def torch_logits(model: DistilBertForSequenceClassification, batches: Sequence[Batch], n: int) -> np.ndarray:
    device = next(model.parameters()).device
    logits = np.zeros((n, 2), dtype=np.float32)
    for batch in batches:
        out = model(input_ids=batch.input_ids.to(device), attention_mask=batch.attention_mask.to(device)).logits
        logits[batch.rows] = out.float().cpu().numpy()
    return logits


def spam_probability(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted.astype(np.float64))
    return np.asarray(exp[:, 1] / exp.sum(axis=1))


def parity(reference: np.ndarray, logits: np.ndarray, labels: Sequence[int]) -> dict[str, Any]:
    agree = reference.argmax(axis=1) == logits.argmax(axis=1)
    return {
        "max_abs_logit_diff": float(np.abs(reference - logits).max()),
        "argmax_agreement": float(agree.mean()),
        "argmax_disagreements": int((~agree).sum()),
        "f1": spam_metrics(labels, spam_probability(logits))["f1"],
    }


def load_model(model_dir: Path, attention: str) -> DistilBertForSequenceClassification:
    model = DistilBertForSequenceClassification.from_pretrained(model_dir, attn_implementation=attention)
    return model.float().eval()


def environment() -> dict[str, Any]:
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "onnxruntime": ort.__version__,
        "numpy": np.__version__,
        "cpu": platform.processor() or platform.machine(),
        "cuda_available": torch.cuda.is_available(),
    }
    if torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name(0)
        env["cuda"] = torch.version.cuda
        env["bf16_supported"] = torch.cuda.is_bf16_supported()
    return env


def _ms_per_call(call: Callable[[], object], iters: int) -> float:
    """Mean wall time of back-to-back calls, between CUDA events on the current stream."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        call()
    end.record()
    torch.cuda.synchronize()
    return float(start.elapsed_time(end)) / iters


def _inputs(batch: int, seq: int, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(batch * 1000 + seq)
    ids = torch.randint(1000, vocab, (batch, seq), generator=generator)
    return ids.cuda(), torch.ones_like(ids).cuda()


class GraphableDistilBert(torch.nn.Module):
    """The inference forward pass of a DistilBertForSequenceClassification, on its own modules and
    weights, that never reads a tensor on the host, so a CUDA graph can capture it.

    transformers' forward decides how to build the attention mask by reading the mask on the
    host (found on the GPU with transformers 5.17: both its SDPA and eager paths sync), which
    capture forbids; torch.compile's graph mode would avoid that but compiles each of the ten
    measured shapes. Same arithmetic: token + position embeddings and LayerNorm; per layer SDPA
    attention with the padding mask as an additive bias, residual LayerNorm, feed-forward,
    residual LayerNorm; the [CLS] row through pre_classifier, ReLU and classifier. run() checks
    its logits against the transformers model on the same inputs before timing it."""

    def __init__(self, model: DistilBertForSequenceClassification) -> None:
        super().__init__()
        self.model = model
        self.n_heads = int(model.config.n_heads)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        model: Any = self.model  # transformers' submodules, typed loosely by their stubs
        embeddings = model.distilbert.embeddings
        batch, seq = input_ids.shape
        x = embeddings.word_embeddings(input_ids) + embeddings.position_embeddings.weight[:seq]
        x = embeddings.LayerNorm(x)
        dim = x.shape[-1]
        bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(batch, seq, self.n_heads, dim // self.n_heads).transpose(1, 2)

        for layer in model.distilbert.transformer.layer:
            attention = layer.attention
            q, k, v = heads(attention.q_lin(x)), heads(attention.k_lin(x)), heads(attention.v_lin(x))
            context = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
            x = layer.sa_layer_norm(attention.out_lin(context.transpose(1, 2).reshape(batch, seq, dim)) + x)
            ffn = layer.ffn
            x = layer.output_layer_norm(ffn.lin2(ffn.activation(ffn.lin1(x))) + x)
        logits: torch.Tensor = model.classifier(torch.relu(model.pre_classifier(x[:, 0])))
        return logits


def sync_free(forward: Callable[..., object], ids: torch.Tensor, mask: torch.Tensor) -> str | None:
    """None when a forward pass never waits on the GPU (a graph can capture it), else the first
    sync; checked before capturing, since a failed capture can leave the CUDA context unusable."""
    torch.cuda.synchronize()
    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        forward(ids, mask)
        return None
    except RuntimeError as exc:
        return str(exc).splitlines()[0]
    finally:
        torch.cuda.set_sync_debug_mode(previous)


@torch.inference_mode()
def eager_latency(model: DistilBertForSequenceClassification, batch: int, seq: int, iters: int) -> float:
    ids, mask = _inputs(batch, seq, model.config.vocab_size)
    for _ in range(3):
        model(input_ids=ids, attention_mask=mask)
    return _ms_per_call(lambda: model(input_ids=ids, attention_mask=mask), iters)


@torch.inference_mode()
def graph_latency(forward: GraphableDistilBert, batch: int, seq: int, iters: int) -> float:
    """Capture one forward pass on static buffers and time its replays."""
    static_ids, static_mask = _inputs(batch, seq, forward.model.config.vocab_size)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up allocations and kernel selection outside the capture
        for _ in range(3):
            forward(static_ids, static_mask)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_logits = forward(static_ids, static_mask)
    graph.replay()
    torch.cuda.synchronize()
    if not torch.isfinite(static_logits).all():
        raise RuntimeError("the captured graph produced non-finite logits")
    ms = _ms_per_call(graph.replay, iters)
    del graph
    torch.cuda.empty_cache()
    return ms


@torch.inference_mode()
def graphable_parity(model: DistilBertForSequenceClassification, batches: Sequence[Batch]) -> float:
    """Max |delta logit| between GraphableDistilBert and the transformers forward on the same model."""
    device = next(model.parameters()).device
    forward = GraphableDistilBert(model)
    worst = 0.0
    for batch in batches:
        ids, mask = batch.input_ids.to(device), batch.attention_mask.to(device)
        expected = model(input_ids=ids, attention_mask=mask).logits.float()
        worst = max(worst, float((forward(ids, mask).float() - expected).abs().max()))
    return worst


def throughput(
    model_dir: Path,
    report: dict[str, Any],
    args: argparse.Namespace,
    batches: Sequence[Batch],
    log: Callable[[str], None],
    save: Callable[[], None],
) -> None:
    """fp16 latency and texts/s per point, eager first for every point, then as CUDA graphs, saved as it goes."""
    dtype = torch.float16
    model = to_device(load_model(model_dir, "sdpa"), "cuda", dtype)
    speed: dict[str, Any] = {"dtype": "fp16", "eager_attention": "sdpa", "iters": args.iters, "rows": []}
    report["throughput"] = speed
    for seq in args.seq_lengths:
        for batch in args.batch_sizes:
            ms = eager_latency(model, batch, seq, args.iters)
            speed["rows"].append({"tokens": seq, "batch": batch, "eager_ms": ms, "eager_texts_per_s": batch / ms * 1e3})
            log(json.dumps(speed["rows"][-1]))
    save()
    forward = GraphableDistilBert(model)
    speed["graph"] = {
        "forward": "GraphableDistilBert (the checkpoint's weights, SDPA, no host reads)",
        "max_abs_logit_diff_vs_transformers_fp16": graphable_parity(model, batches),
    }
    with torch.inference_mode():
        sync = sync_free(forward, *_inputs(2, 16, model.config.vocab_size))
    if sync is not None:
        speed["graph"]["skipped"] = f"the forward pass syncs: {sync}"
        save()
        return
    for row in speed["rows"]:
        try:
            ms = graph_latency(forward, row["batch"], row["tokens"], args.iters * 2)
            row.update(graph_ms=ms, graph_texts_per_s=row["batch"] / ms * 1e3)
        except RuntimeError as exc:
            row["graph_error"] = str(exc).splitlines()[0]
        log(json.dumps(row))
        save()


def markdown(report: dict[str, Any]) -> str:
    env = report["environment"]
    limit = f", its first {report['limit']}" if report["limit"] else ""
    lines = [
        "# GPU check of the text model",
        "",
        f"Checkpoint `{report['model_dir']}`, SMS test split ({report['texts']} texts, fingerprint "
        f"{report['fingerprint']}{limit}), max_length {report['max_length']}.",
        f"Machine: {env.get('gpu', 'no GPU')}; torch {env['torch']}, transformers {env['transformers']}, "
        f"onnxruntime {env['onnxruntime']} (CPU).",
        f"Reference: {report['reference']}; ONNX export: {report['onnx_export']}.",
        "",
        "| contender | max abs delta logit | argmax agreement | F1 (spam, 0.5) |",
        "|---|---|---|---|",
        f"| {report['reference']} | 0 | 100 % | {report['reference_f1']:.4f} |",
    ]
    for name, row in report.get("parity", {}).items():
        lines.append(
            f"| {name} | {row['max_abs_logit_diff']:.2e} | {100 * row['argmax_agreement']:.2f} % "
            f"({row['argmax_disagreements']} differ) | {row['f1']:.4f} |"
        )
    if report.get("skipped"):
        lines += ["", f"Skipped: {report['skipped']}"]
    speed = report.get("throughput")
    if speed:
        graph = speed.get("graph", {})
        lines += [
            "",
            f"Throughput, PyTorch {speed['dtype']} on CUDA, full-length inputs, mean of back-to-back calls: "
            f"eager is the transformers model ({speed['eager_attention']} attention); the CUDA graph captures "
            f"{graph.get('forward', 'nothing')}"
            + (
                f", whose logits differ from the eager model's by at most "
                f"{graph['max_abs_logit_diff_vs_transformers_fp16']:.2e}"
                if "max_abs_logit_diff_vs_transformers_fp16" in graph
                else ""
            )
            + (f"; {graph['skipped']}" if "skipped" in graph else "")
            + ".",
            "",
            "| tokens | batch | eager ms | eager texts/s | graph ms | graph texts/s |",
            "|---|---|---|---|---|---|",
        ]
        for row in speed["rows"]:
            graph_ms = f"{row['graph_ms']:.3f}" if "graph_ms" in row else row.get("graph_error", "-")
            graph_tps = f"{row['graph_texts_per_s']:,.0f}" if "graph_texts_per_s" in row else "-"
            lines.append(
                f"| {row['tokens']} | {row['batch']} | {row['eager_ms']:.3f} | {row['eager_texts_per_s']:,.0f} "
                f"| {graph_ms} | {graph_tps} |"
            )
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace, log: Callable[[str], None] = print) -> dict[str, Any]:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model_dir = Path(args.model_dir)
    texts, labels, fingerprint = load_test_split(Path(args.splits) if args.splits else None, args.limit)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    batches = make_batches(tokenizer, texts, args.max_length, args.eval_batch)
    report: dict[str, Any] = {
        "model_dir": str(model_dir),
        "texts": len(texts),
        "limit": args.limit,
        "fingerprint": fingerprint,
        "max_length": args.max_length,
        "environment": environment(),
    }

    def save() -> None:
        (out / "gpu_check.json").write_text(json.dumps(report, indent=2) + "\n")
        (out / "gpu_check.md").write_text(markdown(report))

    log(json.dumps(report["environment"]))
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            onnx_path = Path(scratch) / "model.onnx"
            report["onnx_export"] = export_fp32_onnx(model_dir, onnx_path)
            reference = onnx_logits(onnx_path, batches, len(texts))
        report["reference"] = "ONNX Runtime fp32 (CPU)"
    except Exception as exc:  # the GPU figures are still worth having without the ONNX reference
        report["onnx_export"] = f"failed ({type(exc).__name__}: {exc})"
        report["reference"] = "PyTorch fp32 (CPU), as the ONNX export failed"
        reference = torch_logits(load_model(model_dir, "sdpa"), batches, len(texts))
    log(f"reference: {report['reference']}, export: {report['onnx_export']} ({time.monotonic() - started:.1f}s)")
    report["reference_f1"] = spam_metrics(labels, spam_probability(reference))["f1"]
    report["parity"] = {}
    if not torch.cuda.is_available():
        report["skipped"] = "no CUDA GPU: compared PyTorch fp32 on the CPU only; no fp16/bf16 parity, no throughput"
        log(report["skipped"])
        cpu = load_model(model_dir, "sdpa")
        report["parity"]["PyTorch fp32 (CPU)"] = parity(reference, torch_logits(cpu, batches, len(texts)), labels)
        save()
        return report
    for name, dtype in DTYPES.items():
        if dtype is torch.bfloat16 and not torch.cuda.is_bf16_supported():
            continue
        model = to_device(load_model(model_dir, "sdpa"), "cuda", dtype)
        report["parity"][f"PyTorch {name} (CUDA)"] = parity(reference, torch_logits(model, batches, len(texts)), labels)
        log(f"{name}: {json.dumps(report['parity'][f'PyTorch {name} (CUDA)'])}")
        del model
    save()
    throughput(model_dir, report, args, batches, log, save)
    return report


def _ints(value: str) -> list[int]:
    return [int(v) for v in value.split(",") if v]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", required=True, help="trained text checkpoint (Hugging Face directory)")
    parser.add_argument("--splits", default=None, help="splits JSON (modelops.text.data.save_splits)")
    parser.add_argument("--out", required=True, help="folder for gpu_check.json and gpu_check.md")
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--eval-batch", type=int, default=64)
    parser.add_argument("--limit", type=int, default=None, help="only the first N test texts (harness checks)")
    parser.add_argument("--batch-sizes", type=_ints, default=[1, 8, 32, 128, 512])
    parser.add_argument("--seq-lengths", type=_ints, default=[128, 32])
    parser.add_argument("--iters", type=int, default=50, help="timed eager calls per point (graph: twice as many)")
    report = run(parser.parse_args())
    print(markdown(report))


if __name__ == "__main__":
    main()
