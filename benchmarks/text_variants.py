"""The text model's forward pass alone, per variant: ONNX Runtime CPU time per SMS test text
(one intra-op thread, no spinning, one unpadded text per call, the served session's settings)
and the transformer's own F1 on those texts (argmax of the logits, no lexical blend).

    python benchmarks/text_variants.py [--model var/models/text/current] [--variants served,fusions,dynamic,fp32]

Variants: `served` (the file serving.json names, SkipLayerNormFusion off as
triton_repository/text_classifier serves it), `fusions` (the same file, every ORT fusion on),
`dynamic` (dynamic INT8 of the fp32 export, per-channel 7-bit weights, written to a temporary
directory), `fp32` (model.onnx). Pin it to one core (`taskset -c 1`) on a shared machine.
Never part of the tests."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    artifacts = Path(os.environ.get("ARTIFACTS_DIR", "var/models"))
    parser.add_argument("--model", type=Path, default=artifacts / "text" / "current")
    parser.add_argument("--variants", default="served,fusions,dynamic,fp32")
    args = parser.parse_args()

    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    from modelops.text.data import load_sms_splits
    from modelops.triton_configs import TEXT_DISABLED_OPTIMIZERS

    test = load_sms_splits().test
    serving = json.loads((args.model / "serving.json").read_text())
    tokenizer = Tokenizer.from_file(str(args.model / "tokenizer.json"))
    tokenizer.enable_truncation(int(serving.get("max_length", 128)))
    encoded = [e.ids for e in tokenizer.encode_batch(list(test.texts))]
    labels = np.array(test.labels)
    tmp = Path(tempfile.mkdtemp(prefix="text-variants-"))

    def dynamic() -> Path:
        from onnxruntime.quantization import QuantType, quantize_dynamic
        from onnxruntime.quantization.shape_inference import quant_pre_process

        pre, out = tmp / "pre.onnx", tmp / "dynamic.onnx"
        quant_pre_process(str(args.model / "model.onnx"), str(pre), skip_optimization=False, auto_merge=True)
        quantize_dynamic(str(pre), str(out), per_channel=True, reduce_range=True, weight_type=QuantType.QInt8)
        return out

    served = args.model / serving.get("model_file", "model.onnx")
    disabled = ";".join(TEXT_DISABLED_OPTIMIZERS)
    variants = {
        "served": lambda: (served, disabled),
        "fusions": lambda: (served, ""),
        "dynamic": lambda: (dynamic(), disabled),
        "fp32": lambda: (args.model / "model.onnx", disabled),
    }
    for name in args.variants.split(","):
        path, off = variants[name]()
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if off:
            options.add_session_config_entry("optimization.disable_specified_optimizers", off)
        session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
        inputs = {i.name for i in session.get_inputs()}

        def logits(ids: list[int], session: ort.InferenceSession = session, inputs: set[str] = inputs) -> np.ndarray:
            row = np.array([ids], dtype=np.int64)
            feeds = {"input_ids": row, "attention_mask": np.ones_like(row)}
            return session.run(None, {k: v for k, v in feeds.items() if k in inputs})[0][0]

        for ids in encoded[:30]:  # warm
            logits(ids)
        cpu = time.process_time()
        predicted = np.array([logits(ids) for ids in encoded]).argmax(axis=1)
        cpu_ms = (time.process_time() - cpu) * 1000 / len(encoded)
        tp = int(((predicted == 1) & (labels == 1)).sum())
        wrong = int((predicted != labels).sum())
        f1 = 2 * tp / (2 * tp + wrong)
        print(f"{name}: {cpu_ms:.2f} ms CPU per text, transformer F1 {f1:.4f} ({len(encoded)} texts, {path.name})")


if __name__ == "__main__":
    main()
