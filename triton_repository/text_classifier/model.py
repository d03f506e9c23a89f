"""Triton python backend: DistilBERT sequence classifier on ONNX Runtime (CPU profile).

input_ids / attention_mask arrive unpadded per request (allow_ragged_batch), so the dynamic
batcher can group texts of different lengths; execute pads them to the longest one in the
batch (pad id 0, attention 0) and runs one ORT call. Output `logits` [batch, num_labels];
the caller applies the softmax (the GPU profile serves the same contract from a TensorRT
plan, which has no softmax either).

Threads: ORT intra-op threads come from the INTRA_OP_THREADS parameter (2 on this 2-core
machine: one instance using both cores beats two instances fighting over them, and the
dynamic batcher keeps that instance busy with whole batches).
"""

from pathlib import Path

import numpy as np
import onnxruntime as ort
import triton_python_backend_utils as pb_utils


def _param(config, name, default):
    value = config.get("parameters", {}).get(name, {}).get("string_value")
    return default if value in (None, "") else value


class TritonPythonModel:
    def initialize(self, args):
        import json

        config = json.loads(args["model_config"])
        version_dir = Path(args["model_repository"]) / args["model_version"]
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(_param(config, "INTRA_OP_THREADS", "2"))
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(
            str(version_dir / "model.onnx"), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self.input_names = {i.name for i in self.session.get_inputs()}
        self.output_name = self.session.get_outputs()[0].name

    def execute(self, requests):
        ids_list, mask_list = [], []
        for request in requests:
            ids = pb_utils.get_input_tensor_by_name(request, "input_ids").as_numpy()
            mask = pb_utils.get_input_tensor_by_name(request, "attention_mask").as_numpy()
            ids_list.append(ids.reshape(-1, ids.shape[-1]) if ids.ndim else ids.reshape(1, -1))
            mask_list.append(mask.reshape(-1, mask.shape[-1]) if mask.ndim else mask.reshape(1, -1))
        width = max(a.shape[1] for a in ids_list)
        rows = sum(a.shape[0] for a in ids_list)
        ids = np.zeros((rows, width), dtype=np.int64)
        mask = np.zeros((rows, width), dtype=np.int64)
        offsets = []
        row = 0
        for a, m in zip(ids_list, mask_list, strict=True):
            ids[row : row + a.shape[0], : a.shape[1]] = a
            mask[row : row + a.shape[0], : m.shape[1]] = m
            offsets.append((row, row + a.shape[0]))
            row += a.shape[0]
        feeds = {"input_ids": ids, "attention_mask": mask}
        feeds = {k: v for k, v in feeds.items() if k in self.input_names}
        logits = self.session.run([self.output_name], feeds)[0].astype(np.float32)
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("logits", logits[a:b])]) for a, b in offsets]
