"""Triton python backend: TEXT (BYTES) -> input_ids, attention_mask (INT64), unpadded.

Runs the Hugging Face fast tokenizer (tokenizer.json, the `tokenizers` library, no
transformers import) published next to this file with the text model, truncating at the
max_length from serving.json. Each request gets its own response, so a single text is never
padded; only the rows of one multi-row request are padded to their longest row (pad id 0,
attention 0), which the classifier masks out.
"""

import json
from pathlib import Path

import numpy as np
import triton_python_backend_utils as pb_utils
from tokenizers import Tokenizer


class TritonPythonModel:
    def initialize(self, args):
        version_dir = Path(args["model_repository"]) / args["model_version"]
        serving = json.loads((version_dir / "serving.json").read_text())
        self.max_length = int(serving["max_length"])
        self.version = str(args["model_version"])
        self.tokenizer = Tokenizer.from_file(str(version_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=self.max_length)
        self.pad_id = int(serving.get("pad_token_id", 0))
        # GPU profile: pad to length buckets so TensorRT sees few distinct shapes.
        config = json.loads(args["model_config"])
        buckets = config.get("parameters", {}).get("PAD_BUCKETS", {}).get("string_value", "")
        self.buckets = sorted(int(b) for b in buckets.split(",") if b.strip())

    def execute(self, requests):
        responses = []
        for request in requests:
            raw = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy().reshape(-1)
            texts = [t.decode("utf-8", errors="replace") if isinstance(t, bytes) else str(t) for t in raw]
            encodings = self.tokenizer.encode_batch(texts)
            width = max((len(e.ids) for e in encodings), default=0)
            if self.buckets:
                width = next((b for b in self.buckets if b >= width), width)
            ids = np.full((len(encodings), width), self.pad_id, dtype=np.int64)
            mask = np.zeros((len(encodings), width), dtype=np.int64)
            for i, enc in enumerate(encodings):
                ids[i, : len(enc.ids)] = enc.ids
                mask[i, : len(enc.ids)] = 1
            version = np.array([[self.version.encode()]] * len(encodings), dtype=np.object_)
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("input_ids", ids),
                        pb_utils.Tensor("attention_mask", mask),
                        pb_utils.Tensor("VERSION", version),
                    ]
                )
            )
        return responses
