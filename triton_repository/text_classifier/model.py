"""Triton python backend: DistilBERT sequence classifier on ONNX Runtime (CPU profile).

input_ids / attention_mask arrive unpadded per request (allow_ragged_batch), so the dynamic
batcher can group texts of different lengths; execute sorts the rows by length and runs one
ORT call per group of similar lengths, padded to the group's longest (pad id 0, attention
0), so short posts never pay for a long preview's padding. Output `logits` [batch, num_labels];
the caller applies the softmax (the GPU profile serves the same contract from a TensorRT
plan, which has no softmax either).

Threads: ORT intra-op threads come from the INTRA_OP_THREADS parameter (the CPU profile runs
two instances x 1 thread: the int8 forward pass of a short text does not speed up with a
second thread, a second instance doubles throughput; the numbers are in config.pbtxt).
"""

import gc
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
        options.intra_op_num_threads = int(_param(config, "INTRA_OP_THREADS", "1"))
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # ORT's worker threads busy-wait between calls by default; on 2 shared cores that
        # spinning steals the CPU the tokenizer, the trees and the BLS model need.
        spinning = _param(config, "ALLOW_SPINNING", "0")
        options.add_session_config_entry("session.intra_op.allow_spinning", spinning)
        options.add_session_config_entry("session.inter_op.allow_spinning", spinning)
        # Graph fusions left off (";"-separated ORT optimizer names), the same list the
        # offline evaluation uses (modelops/text/inference.py DISABLED_OPTIMIZERS): onnxruntime's
        # fused SkipLayerNormalization is slower on CPU than Add + LayerNormalization.
        disabled = _param(config, "DISABLED_OPTIMIZERS", "")
        if disabled:
            options.add_session_config_entry("optimization.disable_specified_optimizers", disabled)
        self.session = ort.InferenceSession(
            str(version_dir / "model.onnx"), sess_options=options, providers=["CPUExecutionProvider"]
        )
        # Rows whose lengths are within this ratio share one padded ORT call; longer ones get
        # their own (measured here: padding costs more than batching saves on CPU).
        self.group_ratio = float(_param(config, "LENGTH_GROUP_RATIO", "1.25"))
        self.input_names = {i.name for i in self.session.get_inputs()}
        self.output_name = self.session.get_outputs()[0].name
        # This stub lives as long as the model version: take what initialize built (imports,
        # sessions, tables) out of the garbage collector's full collections, whose walk of
        # those objects otherwise pauses whichever request triggers it (config/warmup.py).
        gc.freeze()

    def _run(self, rows):
        """One ORT call over `rows` (list of (ids, mask) 1-D arrays), padded to the longest."""
        width = max(len(ids) for ids, _ in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, (row_ids, row_mask) in enumerate(rows):
            ids[i, : len(row_ids)] = row_ids
            mask[i, : len(row_mask)] = row_mask
        feeds = {"input_ids": ids, "attention_mask": mask}
        feeds = {k: v for k, v in feeds.items() if k in self.input_names}
        return self.session.run([self.output_name], feeds)[0].astype(np.float32)

    def execute(self, requests):
        rows, owners = [], []
        for r, request in enumerate(requests):
            ids = pb_utils.get_input_tensor_by_name(request, "input_ids").as_numpy()
            mask = pb_utils.get_input_tensor_by_name(request, "attention_mask").as_numpy()
            ids = ids.reshape(-1, ids.shape[-1])
            mask = mask.reshape(-1, mask.shape[-1])
            for i in range(ids.shape[0]):
                # Rows of a multi-row request come right-padded: trim to the real tokens.
                n = max(int(mask[i].sum()), 1)
                rows.append((ids[i, :n], mask[i, :n]))
                owners.append(r)
        # Group rows of similar length (sorted; a group's longest row is at most group_ratio
        # times its shortest) so a long preview does not make short posts pay for padding.
        order = sorted(range(len(rows)), key=lambda i: len(rows[i][0]))
        logits = [None] * len(rows)
        group = []
        for i in [*order, None]:
            if group and (i is None or len(rows[i][0]) > self.group_ratio * max(len(rows[group[0]][0]), 8)):
                out = self._run([rows[j] for j in group])
                for k, j in enumerate(group):
                    logits[j] = out[k]
                group = []
            if i is not None:
                group.append(i)
        responses = []
        for r in range(len(requests)):
            mine = np.stack([logits[i] for i in range(len(rows)) if owners[i] == r]).astype(np.float32)
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("logits", mine)]))
        return responses
