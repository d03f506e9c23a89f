"""The single source of truth for the Triton model configurations of both profiles.

`render(profile)` returns {model name: config.pbtxt text}. The CPU profile is committed in
triton_repository/ (a test checks the files equal this output); the GPU profile is written
by modelops/gpu_profile.py. Tensor names here are also what scoring/triton_client.py and
the model.py files use; dims come from contracts/feature_schema.py.

Run `python -m modelops.triton_configs` to rewrite triton_repository/*/config.pbtxt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from contracts.feature_schema import BEHAVIOUR_FEATURES, FUSION_FEATURES, LINK_FEATURES

# ONNX Runtime graph fusions left off everywhere the text model runs (offline evaluation in
# modelops/text/inference.py; serving through text_classifier's DISABLED_OPTIMIZERS
# parameter), so that the score a model was evaluated with is the score it serves.
# SkipLayerNormFusion: onnxruntime 1.31's CPU SkipLayerNormalization kernel took 17 % of an int8
# forward pass (ORT profile: 12 nodes, ~0.4 ms each for a [4, 25, 384] batch, 7x a plain
# LayerNormalization of the same shape). Add + LayerNormalization instead: 2.96 -> 2.31 ms per
# SMS (1 thread, batches of 4 length-sorted texts, best of 4 runs); probabilities move by at
# most 2e-4. Numbers in benchmarks/RESULTS.md.
TEXT_DISABLED_OPTIMIZERS = ("SkipLayerNormFusion",)

Profile = Literal["cpu", "gpu"]

# Text length cap (tokens, incl. [CLS]/[SEP]); settings.TEXT_MAX_LENGTH default. The GPU
# engine's shape profile is built for exactly this.
MAX_TEXT_TOKENS = 128

# Batch caps. spam_pipeline hands at most PIPELINE_MAX_BATCH rows to each tree model in one
# request, so the tree models must accept at least that many.
PIPELINE_MAX_BATCH = 32
TEXT_MAX_BATCH = 32
TOKENIZER_MAX_BATCH = 64
TREE_MAX_BATCH = 64
# Texts per tokenizer -> text_classifier request sent by spam_pipeline. Small chunks of one
# execution run concurrently, and the classifier's batcher still merges chunks of concurrent
# executions; one big request would serialise a 32-row batch behind its longest text.
TEXT_CHUNK = 8
# spam_pipeline's LRU of text-model scores, entries per instance (0 = off). An entry is a
# token-id string plus a float (~0.5 KB for an SMS): 8192 entries cost ~4 MB per instance.
TEXT_CACHE_SIZE = 8192
# spam_pipeline's text cascade (modelops/text/cascade.py): "on" uses the bounds the published
# text model carries (none: off); "off" runs the transformer on every text whatever they say.
TEXT_CASCADE = "on"

# GPU: the tokenizer pads to these widths so requests of similar length share a TensorRT
# shape and batch together (TensorRT needs one shape per batch; no ragged inputs).
GPU_PAD_BUCKETS = (16, 32, 64, MAX_TEXT_TOKENS)
# GPU text_classifier batches, from PyTorch fp16 run as a CUDA graph (benchmarks/gpu_check.py, one
# NVIDIA H200, 128 tokens): batch 32 in 0.68 ms (47k texts/s), 128 in 1.84 ms (69k/s), 512 in
# 6.7 ms (76k/s). Throughput flattens past 128, so the engine is tuned for 128 and the batcher may
# form batches up to 256, where one call still takes about 3.5 ms.
GPU_TEXT_MAX_BATCH = 256
GPU_TEXT_PREFERRED_BATCH = (32, 64, 128)
GPU_OPT_BATCH = 128


@dataclass(frozen=True)
class Tensor:
    name: str
    dtype: str  # TYPE_FP32, TYPE_INT64, TYPE_STRING
    dims: tuple[int, ...]
    ragged: bool = False
    optional: bool = False


@dataclass(frozen=True)
class ModelSpec:
    name: str
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    max_batch_size: int
    comment: str
    batching_comment: str
    instances: int = 1
    instance_comment: str = ""
    preferred_batch_sizes: tuple[int, ...] = ()
    max_queue_delay_us: int = 0
    parameters: dict[str, str] = field(default_factory=dict)
    parameters_comment: str = ""
    backend: str = "python"
    platform: str = ""
    kind: str = "KIND_CPU"


N_LINK = len(LINK_FEATURES)
N_BEHAVIOUR = len(BEHAVIOUR_FEATURES)
N_FUSION = len(FUSION_FEATURES)

PIPELINE_INPUTS = (
    Tensor("TEXT", "TYPE_STRING", (1,)),
    Tensor("PREVIEW_TEXT", "TYPE_STRING", (1,), optional=True),
    Tensor("LINK_FEATURES", "TYPE_FP32", (N_LINK,)),
    Tensor("BEHAVIOUR_FEATURES", "TYPE_FP32", (N_BEHAVIOUR,)),
)
PIPELINE_OUTPUTS = (
    Tensor("TEXT_PROB", "TYPE_FP32", (1,)),
    Tensor("PREVIEW_PROB", "TYPE_FP32", (1,)),
    Tensor("LINK_PROB", "TYPE_FP32", (1,)),
    Tensor("BEHAVIOUR_PROB", "TYPE_FP32", (1,)),
    Tensor("FINAL_PROB", "TYPE_FP32", (1,)),
    # The abuse model's calibrated probability; -1 when the bundle carries no abuse model.
    Tensor("ABUSE_PROB", "TYPE_FP32", (1,)),
    Tensor("LINK_CONTRIBUTIONS", "TYPE_FP32", (N_LINK + 1,)),
    Tensor("BEHAVIOUR_CONTRIBUTIONS", "TYPE_FP32", (N_BEHAVIOUR + 1,)),
    Tensor("FUSION_CONTRIBUTIONS", "TYPE_FP32", (N_FUSION + 1,)),
    Tensor("MODEL_VERSIONS", "TYPE_STRING", (1,)),
    Tensor("UNFAMILIARITY", "TYPE_FP32", (1,)),
    # True where the text cascade decided the text score without the transformer.
    Tensor("TEXT_MODEL_SKIPPED", "TYPE_BOOL", (1,)),
)

_ZERO_DELAY = (
    "max_queue_delay 0: a nonzero delay is paid by every request at low load (and adds up "
    "along the pipeline); under load requests queue while the instance is busy and the next "
    "execution takes them all, so batches form without waiting."
)


def _tree_spec(name: str, n_features: int, what: str, profile: Profile) -> ModelSpec:
    params = {"NTHREAD": "1"}
    if profile == "gpu":
        params["DEVICE"] = "cuda"
    return ModelSpec(
        name=name,
        inputs=(Tensor("FEATURES", "TYPE_FP32", (n_features,)),),
        outputs=(
            Tensor("PROB", "TYPE_FP32", (1,)),
            Tensor("CONTRIBUTIONS", "TYPE_FP32", (n_features + 1,)),
            Tensor("VERSION", "TYPE_STRING", (1,)),
        ),
        max_batch_size=TREE_MAX_BATCH,
        comment=f"XGBoost {what} (python backend). CONTRIBUTIONS = pred_contribs in feature order, then bias.",
        batching_comment=f"Trees cost microseconds per row: batching only saves per-call overhead. {_ZERO_DELAY}",
        instance_comment="one instance, nthread 1: the model is tiny; the cores go to the text model.",
        parameters=params,
        max_queue_delay_us=0,
        kind="KIND_GPU" if profile == "gpu" else "KIND_CPU",
    )


def specs(profile: Profile) -> dict[str, ModelSpec]:
    tokenizer_params = {}
    if profile == "gpu":
        tokenizer_params["PAD_BUCKETS"] = ",".join(str(b) for b in GPU_PAD_BUCKETS)
    text_tensors_in = (
        Tensor("input_ids", "TYPE_INT64", (-1,), ragged=profile == "cpu"),
        Tensor("attention_mask", "TYPE_INT64", (-1,), ragged=profile == "cpu"),
    )
    if profile == "cpu":
        text = ModelSpec(
            name="text_classifier",
            inputs=text_tensors_in,
            outputs=(Tensor("logits", "TYPE_FP32", (2,)),),
            max_batch_size=TEXT_MAX_BATCH,
            comment="DistilBERT spam classifier: ONNX Runtime inside the python backend (CPU profile).",
            batching_comment=(
                "allow_ragged_batch on the inputs lets texts of different lengths share a batch; "
                "model.py runs rows within LENGTH_GROUP_RATIO of each other as one padded ORT call "
                "(measured on 2 cores: equal-length batching saves 10-25% per row, padding costs more). "
                "Preferred sizes are the batch widths ORT handles efficiently on 2 cores; " + _ZERO_DELAY
            ),
            preferred_batch_sizes=(4, 8, 16),
            instances=2,
            instance_comment=(
                "two instances x 1 intra-op thread (the served model is the static-int8 export). "
                "Measured by benchmarks/serving.py --variants on these 2 cores (shared, load ~3.5), "
                "one run, perf_analyzer on 300 SMS texts, infer/s at concurrency 1/2/3/4: "
                "2 x 1 thread 197/381/461/475 (p99 10-20 ms); 1 x 2 threads 197/218/229/244 "
                "(the int8 forward pass of one SMS, 4.4 ms, gains nothing from a second thread, "
                "so requests queue behind it); 2 x 1 without dynamic batching 198/236/284/275. "
                "Each instance runs its own request on its own core with no intra-op "
                "synchronisation; two cores, two instances, the ceiling is ~2 x 1000/4.4 ms. "
                "Under heavy load from other processes (load average 5-6, interleaved run) the "
                "two tie at the peak (232 vs 251) and 1 x 2 is faster alone (c=1: 145 vs 200), "
                "since one thread then gets a share of one core: the choice is for cores that "
                "Triton has to itself. "
                "No thread spinning: idle ORT threads would burn the cores the other stubs need."
            ),
            parameters={
                "INTRA_OP_THREADS": "1",
                "ALLOW_SPINNING": "0",
                "LENGTH_GROUP_RATIO": "1.25",
                # The offline evaluation's list: served scores equal evaluated ones.
                "DISABLED_OPTIMIZERS": ";".join(TEXT_DISABLED_OPTIMIZERS),
            },
        )
    else:
        text = ModelSpec(
            name="text_classifier",
            inputs=text_tensors_in,
            outputs=(Tensor("logits", "TYPE_FP32", (2,)),),
            max_batch_size=GPU_TEXT_MAX_BATCH,
            comment=(
                "DistilBERT spam classifier as a TensorRT FP16 plan built by deploy/gpu/build_engine.sh "
                f"with shape profile min 1x1, opt {GPU_OPT_BATCH}x{MAX_TEXT_TOKENS}, "
                f"max {GPU_TEXT_MAX_BATCH}x{MAX_TEXT_TOKENS} (matches max_batch_size)."
            ),
            batching_comment=(
                "TensorRT needs one shape per batch: the tokenizer pads to length buckets so "
                "similar texts batch together; a short queue delay gathers fuller GPU batches. "
                "Texts/s per call grow up to batch 128 and flatten beyond (docs/deploy.md)."
            ),
            preferred_batch_sizes=GPU_TEXT_PREFERRED_BATCH,
            max_queue_delay_us=200,
            instances=1,
            instance_comment="one engine instance per GPU; add a second to overlap copies and compute.",
            backend="",
            platform="tensorrt_plan",
            kind="KIND_GPU",
        )
    return {
        "tokenizer": ModelSpec(
            name="tokenizer",
            inputs=(Tensor("TEXT", "TYPE_STRING", (1,)),),
            outputs=(
                Tensor("input_ids", "TYPE_INT64", (-1,)),
                Tensor("attention_mask", "TYPE_INT64", (-1,)),
                Tensor("VERSION", "TYPE_STRING", (1,)),
            ),
            # A direct caller may send the tokenizer as many texts as the classifier takes.
            max_batch_size=TOKENIZER_MAX_BATCH if profile == "cpu" else GPU_TEXT_MAX_BATCH,
            comment=(
                "Fast WordPiece tokenizer (tokenizers library): TEXT -> input_ids/attention_mask, "
                f"truncated at max_length; {'unpadded per request' if profile == 'cpu' else 'padded to buckets'}."
            ),
            batching_comment=f"Tokenizing is ~0.1 ms a text; batching only saves stub round trips. {_ZERO_DELAY}",
            instance_comment="one instance: cheap work, a second stub process would only cost memory.",
            parameters=tokenizer_params,
        ),
        "text_classifier": text,
        "link_model": _tree_spec("link_model", N_LINK, "link/IP model over LINK_FEATURES", profile),
        "behaviour_model": _tree_spec(
            "behaviour_model", N_BEHAVIOUR, "behaviour model over BEHAVIOUR_FEATURES", profile
        ),
        "fusion_model": _tree_spec("fusion_model", N_FUSION, "fusion tree over FUSION_FEATURES", profile),
        "spam_pipeline": ModelSpec(
            name="spam_pipeline",
            inputs=PIPELINE_INPUTS,
            outputs=PIPELINE_OUTPUTS,
            max_batch_size=PIPELINE_MAX_BATCH,
            comment=(
                "Entry point (BLS, python backend): text + optional preview + feature vectors -> all "
                "sub-scores, final score, contributions and the versions that answered. Tokenizer "
                "and tree models run in-process from copies bundled into each version folder; "
                "text_classifier is the one BLS call."
            ),
            batching_comment=(
                "Each execution sends the texts of all its rows to text_classifier in concurrent "
                f"chunks, so the classifier's batcher merges concurrent posts. {_ZERO_DELAY}"
            ),
            instances=1 if profile == "cpu" else 2,
            instance_comment=(
                (
                    "one instance on CPU: each execution sends its texts to text_classifier in "
                    "concurrent chunks, so one pipeline keeps both text instances busy, and a "
                    "second instance costs a stub of ~255 MB resident (benchmarks/memory.py "
                    "--layouts and --stack; numbers in benchmarks/RESULTS.md, Memory)."
                )
                if profile == "cpu"
                else "two instances: an execution mostly awaits the text model, so a second one lets "
                "the next batch tokenize and run its trees meanwhile."
            ),
            parameters={"TEXT_CACHE_SIZE": str(TEXT_CACHE_SIZE), "TEXT_CASCADE": TEXT_CASCADE, **tokenizer_params},
            parameters_comment=(
                "TEXT_CACHE_SIZE: LRU entries per instance of text-model scores keyed by "
                "(text_classifier version, token ids); spam campaigns repeat themselves, a hit "
                "skips the classifier and returns the bit-identical score. 0 turns it off. "
                "TEXT_CASCADE: on = a familiar text the lexical half decides within the bounds "
                "the text model's bundle carries skips the transformer; off = never."
                + (" PAD_BUCKETS: the bundled tokenizer pads as the tokenizer model does." if profile == "gpu" else "")
            ),
        ),
    }


def _dims(dims: tuple[int, ...]) -> str:
    return "[ " + ", ".join(str(d) for d in dims) + " ]"


def _tensor_block(t: Tensor, *, is_input: bool) -> str:
    lines = ["  {", f'    name: "{t.name}"', f"    data_type: {t.dtype}", f"    dims: {_dims(t.dims)}"]
    if is_input and t.ragged:
        lines.append("    allow_ragged_batch: true")
    if is_input and t.optional:
        lines.append("    optional: true")
    lines.append("  }")
    return "\n".join(lines)


def _wrap_comment(text: str, indent: str = "") -> list[str]:
    words, lines, line = text.split(), [], ""
    for word in words:
        if len(line) + len(word) + 1 > 92:
            lines.append(f"{indent}# {line}")
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(f"{indent}# {line}")
    return lines


def render_spec(spec: ModelSpec, profile: Profile) -> str:
    out = [f"# GENERATED by modelops/triton_configs.py ({profile} profile); edit there, not here."]
    out += _wrap_comment(spec.comment)
    out.append(f'name: "{spec.name}"')
    if spec.platform:
        out.append(f'platform: "{spec.platform}"')
    else:
        out.append(f'backend: "{spec.backend}"')
    out.append(f"max_batch_size: {spec.max_batch_size}")
    out.append("input [")
    out.append(",\n".join(_tensor_block(t, is_input=True) for t in spec.inputs))
    out.append("]")
    out.append("output [")
    out.append(",\n".join(_tensor_block(t, is_input=False) for t in spec.outputs))
    out.append("]")
    out += _wrap_comment(spec.batching_comment)
    out.append("dynamic_batching {")
    if spec.preferred_batch_sizes:
        out.append(f"  preferred_batch_size: {_dims(spec.preferred_batch_sizes)}")
    out.append(f"  max_queue_delay_microseconds: {spec.max_queue_delay_us}")
    out.append("}")
    # Only the newest version is served; rollback publishes an old version's files as a new
    # number (modelops/model_repository.py), so the policy never has to change.
    out.append("version_policy: { latest { num_versions: 1 } }")
    if spec.instance_comment:
        out += _wrap_comment(spec.instance_comment)
    out.append(f"instance_group [ {{ count: {spec.instances}, kind: {spec.kind} }} ]")
    if spec.parameters:
        if spec.parameters_comment:
            out += _wrap_comment(spec.parameters_comment)
        for key, value in spec.parameters.items():
            out.append(f'parameters: {{ key: "{key}", value: {{ string_value: "{value}" }} }}')
    return "\n".join(out) + "\n"


def render(profile: Profile) -> dict[str, str]:
    return {name: render_spec(spec, profile) for name, spec in specs(profile).items()}


def write_cpu_configs(repository: Path) -> list[Path]:
    written = []
    for name, text in render("cpu").items():
        path = repository / name / "config.pbtxt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


if __name__ == "__main__":
    root = Path(__file__).resolve().parents[1] / "triton_repository"
    for p in write_cpu_configs(root):
        print(p)
