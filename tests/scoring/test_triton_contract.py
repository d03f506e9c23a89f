"""config.pbtxt is the contract: parse every config of both profiles with Triton's own
ModelConfig protobuf and check it against the exported ONNX model, the model.py files, the
client's constants and contracts/feature_schema.py."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from contracts.feature_schema import BEHAVIOUR_FEATURES, FUSION_FEATURES, LINK_FEATURES
from modelops import gpu_profile, model_repository, triton_configs
from modelops.tiny import cached_tiny_artifacts
from modelops.triton_server import MODEL_NAMES
from scoring import triton_client

CPU_REPO = model_repository.SOURCE_REPOSITORY
ONNX_TO_TRITON = {onnx.TensorProto.INT64: "TYPE_INT64", onnx.TensorProto.FLOAT: "TYPE_FP32"}
TRITON_TO_CLIENT = {"TYPE_FP32": "FP32", "TYPE_INT64": "INT64", "TYPE_STRING": "BYTES", "TYPE_BOOL": "BOOL"}
TREES = {"link_model": LINK_FEATURES, "behaviour_model": BEHAVIOUR_FEATURES, "fusion_model": FUSION_FEATURES}


def _parse(path: Path) -> mc.ModelConfig:
    return text_format.Parse(path.read_text(), mc.ModelConfig())


def _configs(profile: str) -> dict[str, mc.ModelConfig]:
    root = CPU_REPO if profile == "cpu" else gpu_profile.GPU_REPOSITORY
    return {name: _parse(root / name / "config.pbtxt") for name in MODEL_NAMES}


def _dtype(cfg: mc.ModelConfig, name: str, *, output: bool = False) -> str:
    tensors = cfg.output if output else cfg.input
    [t] = [t for t in tensors if t.name == name]
    return str(mc.DataType.Name(t.data_type))


def _io(cfg: mc.ModelConfig, *, output: bool = False) -> dict[str, tuple[str, tuple[int, ...]]]:
    tensors = cfg.output if output else cfg.input
    return {t.name: (mc.DataType.Name(t.data_type), tuple(t.dims)) for t in tensors}


@pytest.fixture(scope="module")
def tiny_onnx() -> onnx.ModelProto:
    artifacts = cached_tiny_artifacts(seed=0)
    assert artifacts.text is not None
    return onnx.load(str(artifacts.text / "model.onnx"))


@pytest.mark.parametrize("profile", ["cpu", "gpu"])
def test_committed_configs_are_generated_from_the_single_source(profile):
    root = CPU_REPO if profile == "cpu" else gpu_profile.GPU_REPOSITORY
    for name, text in triton_configs.render(profile).items():
        assert (root / name / "config.pbtxt").read_text() == text, f"regenerate {profile} configs ({name})"


@pytest.mark.parametrize("profile", ["cpu", "gpu"])
def test_every_config_parses_and_names_itself(profile):
    configs = _configs(profile)
    assert set(configs) == set(MODEL_NAMES) == set(model_repository.ALL_MODELS)
    for name, cfg in configs.items():
        assert cfg.name == name
        assert cfg.max_batch_size > 0
        assert cfg.HasField("dynamic_batching")
        assert cfg.version_policy.latest.num_versions == 1


@pytest.mark.parametrize("profile", ["cpu", "gpu"])
def test_text_classifier_matches_the_exported_onnx(profile, tiny_onnx):
    cfg = _configs(profile)["text_classifier"]
    graph = tiny_onnx.graph
    onnx_inputs = {i.name: i for i in graph.input}
    assert set(_io(cfg)) == set(onnx_inputs)
    for name, (dtype, dims) in _io(cfg).items():
        tensor_type = onnx_inputs[name].type.tensor_type
        assert ONNX_TO_TRITON[tensor_type.elem_type] == dtype
        # ONNX [batch, sequence]; Triton adds the batch dim itself: dims == [-1].
        assert len(tensor_type.shape.dim) == len(dims) + 1
        assert dims == (-1,)
    [onnx_out] = graph.output
    (out_name, (out_dtype, out_dims)) = next(iter(_io(cfg, output=True).items()))
    assert out_name == onnx_out.name == "logits"
    assert ONNX_TO_TRITON[onnx_out.type.tensor_type.elem_type] == out_dtype
    assert (onnx_out.type.tensor_type.shape.dim[1].dim_value,) == out_dims
    if profile == "cpu":
        assert all(t.allow_ragged_batch for t in cfg.input)
        assert cfg.backend == "python"
    else:
        assert cfg.platform == "tensorrt_plan"
        assert not any(t.allow_ragged_batch for t in cfg.input)


@pytest.mark.parametrize("profile", ["cpu", "gpu"])
def test_tokenizer_feeds_the_text_classifier(profile):
    configs = _configs(profile)
    tok_out = _io(configs["tokenizer"], output=True)
    for name, spec in _io(configs["text_classifier"]).items():
        assert tok_out[name] == spec
    assert configs["tokenizer"].max_batch_size >= configs["text_classifier"].max_batch_size
    # spam_pipeline sends TEXT_CHUNK texts per request to both.
    assert configs["text_classifier"].max_batch_size >= triton_configs.TEXT_CHUNK


@pytest.mark.parametrize("profile", ["cpu", "gpu"])
def test_tree_models_match_the_feature_schema(profile):
    configs = _configs(profile)
    for name, names in TREES.items():
        cfg = configs[name]
        assert _io(cfg) == {"FEATURES": ("TYPE_FP32", (len(names),))}
        assert _io(cfg, output=True) == {
            "PROB": ("TYPE_FP32", (1,)),
            "CONTRIBUTIONS": ("TYPE_FP32", (len(names) + 1,)),
            "VERSION": ("TYPE_STRING", (1,)),
        }
        # spam_pipeline sends all its rows to a tree model in one request.
        assert cfg.max_batch_size >= configs["spam_pipeline"].max_batch_size


@pytest.mark.parametrize("profile", ["cpu", "gpu"])
def test_spam_pipeline_matches_the_client_constants(profile):
    cfg = _configs(profile)["spam_pipeline"]
    for tensors, constants in ((_io(cfg), triton_client.INPUTS), (_io(cfg, output=True), triton_client.OUTPUTS)):
        assert list(tensors) == list(constants)
        for name, (dtype, dims) in tensors.items():
            assert (TRITON_TO_CLIENT[dtype], dims) == constants[name]
    assert cfg.max_batch_size == triton_client.MAX_BATCH
    for model, (tensor, names) in triton_client.CONTRIBUTIONS.items():
        assert _io(cfg, output=True)[tensor][1] == (len(names) + 1,)
        assert model in TREES
    [preview] = [t for t in cfg.input if t.name == "PREVIEW_TEXT"]
    assert preview.optional


def test_pipeline_schema_copy_matches_feature_schema():
    schema = model_repository.pipeline_schema()
    assert schema["LINK_FEATURES"] == list(LINK_FEATURES)
    assert schema["BEHAVIOUR_FEATURES"] == list(BEHAVIOUR_FEATURES)
    assert schema["FUSION_FEATURES"] == list(FUSION_FEATURES)
    computed = {"text_prob", "preview_prob", "link_prob", "behaviour_prob"}
    for name in FUSION_FEATURES:
        assert name in computed or name in LINK_FEATURES or name in BEHAVIOUR_FEATURES, name


def test_tree_models_share_one_source():
    assert {model_repository.model_source(name) for name in TREES} == {model_repository.TREE_MODEL_SOURCE}
    assert model_repository.TREE_MODEL_SOURCE.is_file()
    for name in TREES:
        assert not (CPU_REPO / name / "model.py").exists(), name


def test_model_sources_do_not_import_the_project():
    import ast

    for name in MODEL_NAMES:
        tree = ast.parse(model_repository.model_source(name).read_text())
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module.split(".")[0])
        assert not imported & {"django", "scoring", "modelops", "contracts", "moderation", "feedback", "config"}, (
            name,
            imported,
        )


def test_gpu_engine_shapes_match_the_gpu_config():
    cfg = _configs("gpu")["text_classifier"]
    script = (gpu_profile.GPU_ROOT / "build_engine.sh").read_text()
    max_len = triton_configs.MAX_TEXT_TOKENS
    for tensor in ("input_ids", "attention_mask"):
        assert f"{tensor}:1x1" in script
        assert f"{tensor}:{cfg.max_batch_size}x{max_len}" in script
    assert "--fp16" in script
    assert "--minShapes" in script and "--optShapes" in script and "--maxShapes" in script
    assert max(triton_configs.GPU_PAD_BUCKETS) == max_len


def test_gpu_batcher_can_form_batches_of_128_or_more():
    # A GPU's texts/s keep growing up to batch 128 (benchmarks/gpu_check.py); a smaller cap idles it.
    cfg = _configs("gpu")["text_classifier"]
    preferred = list(cfg.dynamic_batching.preferred_batch_size)
    assert max(preferred) >= 128
    assert all(size <= cfg.max_batch_size for size in preferred)
    script = (gpu_profile.GPU_ROOT / "build_engine.sh").read_text()
    assert f"input_ids:{triton_configs.GPU_OPT_BATCH}x" in script and triton_configs.GPU_OPT_BATCH in preferred


def test_the_gpu_profile_keeps_no_copies_of_the_model_sources():
    # Publishing copies model_source(<model>) into each version folder (test_triton_repository).
    assert not list(gpu_profile.GPU_REPOSITORY.glob("**/*.py"))


def test_token_cap_matches_settings(settings):
    assert triton_configs.MAX_TEXT_TOKENS == settings.TEXT_MAX_LENGTH


@pytest.mark.parametrize("profile", ["cpu", "gpu"])
def test_configs_match_the_trainers_export_constants(profile):
    """The text exporter's tensor names and the tabular artifact names are what the
    repository serves and what publish looks for."""
    from modelops.tabular.artifacts import MODEL_FILES
    from modelops.text.inference import INPUT_NAMES, OUTPUT_NAME, SPAM_INDEX

    cfg = _configs(profile)["text_classifier"]
    assert tuple(t.name for t in cfg.input) == INPUT_NAMES
    assert [t.name for t in cfg.output] == [OUTPUT_NAME]
    assert model_repository.pipeline_schema()["TEXT_SPAM_INDEX"] == SPAM_INDEX
    for _model, (kind, _names) in model_repository.TREE_MODELS.items():
        assert MODEL_FILES[kind] == f"{kind}.json"
