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

Latency session: an execution of ONE row of at least LATENCY_MIN_TOKENS tokens runs on a
second session of the same model file with LATENCY_THREADS intra-op threads (0 = off). One
row in the whole execution (not one row in a length group: a 32-post batch often has a lone
longest row) means the dynamic batcher found nothing else queued, so the server is not
saturated and the other core is likely idle: a long post's forward pass then takes both (measured on 2
cores, int8, batch 1: 62 tokens 11.5 -> 7.6 ms, 100 tokens 18.8 -> 12.0 ms, 22 tokens
4.6 -> 4.1 ms at 10 % more CPU). That is the pre-publish check's tail: a 99th-percentile SMS is
about three times the median's length. Under load rows arrive together and take the
one-thread sessions, whose throughput the instance count is sized for. The two sessions give
bit-identical logits (int8 and fp32 matmuls split the output across threads, not the sums;
tests/scoring/test_text_latency_session.py checks it on the served path), so a post's score
does not depend on which one ran. The custom metric text_classifier_rows_total{threads=...}
counts the rows each session ran.
"""

import gc
from pathlib import Path

import numpy as np
import onnxruntime as ort
import triton_python_backend_utils as pb_utils


def _param(config, name, default):
    value = config.get("parameters", {}).get(name, {}).get("string_value")
    return default if value in (None, "") else value


def _rows_counters(args, threads, latency_threads):
    """(family, {"base": counter, "latency": counter}) of text_classifier_rows_total, labelled
    by the session's thread count; (None, {}) where the server has no custom metrics. The
    caller keeps the family: its metrics live as long as it does."""
    family_class = getattr(pb_utils, "MetricFamily", None)
    if family_class is None:
        return None, {}
    try:
        family = family_class(
            name="text_classifier_rows_total",
            description="Rows text_classifier ran, by the ORT session's intra-op threads",
            kind=family_class.COUNTER,
        )
        labels = {"model": args["model_name"], "version": str(args["model_version"])}
        counters = {"base": family.Metric(labels={**labels, "threads": str(threads)})}
        if latency_threads:
            counters["latency"] = family.Metric(labels={**labels, "threads": str(latency_threads)})
        return family, counters
    except Exception as exc:  # metrics disabled on the server: serve without them
        pb_utils.Logger.log_warn(f"text_classifier: no rows metric ({exc})")
        return None, {}


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
        # offline evaluation uses (scoring/ml/text/inference.py DISABLED_OPTIMIZERS): onnxruntime's
        # fused SkipLayerNormalization is slower on CPU than Add + LayerNormalization.
        disabled = _param(config, "DISABLED_OPTIMIZERS", "")
        if disabled:
            options.add_session_config_entry("optimization.disable_specified_optimizers", disabled)
        self.session = ort.InferenceSession(
            str(version_dir / "model.onnx"), sess_options=options, providers=["CPUExecutionProvider"]
        )
        threads = options.intra_op_num_threads
        latency_threads = int(_param(config, "LATENCY_THREADS", "0"))
        self.latency_min_tokens = int(_param(config, "LATENCY_MIN_TOKENS", "32"))
        self.latency_session = None
        if latency_threads > threads:
            options.intra_op_num_threads = latency_threads
            self.latency_session = ort.InferenceSession(
                str(version_dir / "model.onnx"), sess_options=options, providers=["CPUExecutionProvider"]
            )
        latency_threads = latency_threads if self.latency_session is not None else 0
        self.rows_family, self.rows_counter = _rows_counters(args, threads, latency_threads)
        # Rows whose lengths are within this ratio share one padded ORT call; longer ones get
        # their own (measured here: padding costs more than batching saves on CPU).
        self.group_ratio = float(_param(config, "LENGTH_GROUP_RATIO", "1.25"))
        self.input_names = {i.name for i in self.session.get_inputs()}
        self.output_name = self.session.get_outputs()[0].name
        # This stub lives as long as the model version: take what initialize built (imports,
        # sessions, tables) out of the garbage collector's full collections, whose walk of
        # those objects otherwise pauses whichever request triggers it (config/warmup.py).
        gc.freeze()

    def _run(self, rows, alone=False):
        """One ORT call over `rows` (list of (ids, mask) 1-D arrays), padded to the longest;
        `alone`: these rows are the execution's only ones."""
        session, counter = self.session, self.rows_counter.get("base")
        if self.latency_session is not None and alone and len(rows[0][0]) >= self.latency_min_tokens:
            session, counter = self.latency_session, self.rows_counter.get("latency")
        if counter is not None:
            counter.increment(len(rows))
        width = max(len(ids) for ids, _ in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, (row_ids, row_mask) in enumerate(rows):
            ids[i, : len(row_ids)] = row_ids
            mask[i, : len(row_mask)] = row_mask
        feeds = {"input_ids": ids, "attention_mask": mask}
        feeds = {k: v for k, v in feeds.items() if k in self.input_names}
        return session.run([self.output_name], feeds)[0].astype(np.float32)

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
                out = self._run([rows[j] for j in group], alone=len(rows) == 1)
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
