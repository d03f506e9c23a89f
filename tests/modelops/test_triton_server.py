"""A real Triton server (tests/fixtures/triton.py) serving tiny models over gRPC and HTTP."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command

from contracts.feature_schema import BEHAVIOUR_FEATURES, FUSION_FEATURES, LINK_FEATURES
from modelops import model_repository
from modelops.tiny import cached_tiny_artifacts
from scoring.serving import (
    ScoringInput,
    TritonError,
    TritonScoringClient,
    TritonUnavailable,
    get_client,
)
from tests.fixtures.triton import free_ports, start_tiny_triton

pytestmark = pytest.mark.integration


def _as_float32(values: Iterable[float]) -> list[float]:
    """The models output float32; the client prints them as short decimals of the same float32
    values (triton_client.float32_decimals). Bit-identical means identical as float32."""
    return np.asarray(list(values), dtype=np.float32).tolist()


def _row(text: str, preview: str = "", seed: int = 0) -> ScoringInput:
    link = [((i * 7 + seed) % 10) / 10 for i in range(len(LINK_FEATURES))]
    behaviour = [((i * 3 + seed) % 10) / 10 for i in range(len(BEHAVIOUR_FEATURES))]
    return ScoringInput(text=text, preview_text=preview, link=link, behaviour=behaviour)


def _single_client(timeout_s: float | None = None) -> TritonScoringClient:
    """get_client() where one server is configured: a TritonScoringClient, not a pool."""
    client = get_client(timeout_s=timeout_s)
    assert isinstance(client, TritonScoringClient)
    return client


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def test_scores_over_grpc_with_contributions_and_versions(triton_settings):
    client = _single_client()
    assert client.protocol == "grpc"
    assert client.is_ready()
    [out] = client.score([_row("WINNER!! claim your free prize now")])
    for p in (out.text_prob, out.link_prob, out.behaviour_prob, out.final_prob):
        assert 0.0 <= p <= 1.0
    assert out.preview_prob is None
    assert set(out.contributions) == {"link_model", "behaviour_model", "fusion_model"}
    assert list(out.contributions["link_model"]) == [*LINK_FEATURES, "bias"]
    assert list(out.contributions["fusion_model"]) == [*FUSION_FEATURES, "bias"]
    assert out.model_versions == {
        "tokenizer": "1",
        "text_classifier": "1",
        "link_model": "1",
        "behaviour_model": "1",
        "fusion_model": "1",
        "spam_pipeline": "1",
    }
    assert client.model_versions() == out.model_versions


def test_contributions_sum_to_each_models_margin(triton_settings):
    outs = get_client().score([_row("hello there", seed=s) for s in range(5)])
    for out in outs:
        fusion = sum(out.contributions["fusion_model"].values())
        assert fusion == pytest.approx(out.final_margin, abs=1e-4)
        assert sum(out.contributions["link_model"].values()) == pytest.approx(_logit(out.link_prob), abs=1e-4)
        assert sum(out.contributions["behaviour_model"].values()) == pytest.approx(_logit(out.behaviour_prob), abs=1e-4)


def test_preview_text_is_scored_only_when_sent(triton_settings):
    without, with_preview = get_client().score(
        [_row("see this"), _row("see this", preview="Cheap pills, best prices, click to order today")]
    )
    assert without.preview_prob is None
    assert with_preview.preview_prob is not None and 0.0 <= with_preview.preview_prob <= 1.0
    assert with_preview.text_prob == pytest.approx(without.text_prob, abs=1e-5)
    # The fusion tree saw preview_prob = -1 for one and a probability for the other.
    assert with_preview.contributions["fusion_model"]["preview_prob"] is not None


def test_same_text_alone_and_in_a_batch_scores_the_same(triton_server):
    client = triton_server.client()
    target = _row("Congratulations, you have been selected for a cash reward", seed=3)
    [alone] = client.score([target])
    others = [
        _row("hi"),
        _row("a much longer message " * 12, preview="and a preview " * 20),
        _row("ok see you at 5", seed=1),
    ]
    batched = client.score([others[0], target, *others[1:]])[1]
    concurrent = client.score([*others, target], mode="concurrent")[-1]
    for other in (batched, concurrent):
        assert other.text_prob == pytest.approx(alone.text_prob, abs=1e-5)
        assert other.final_prob == pytest.approx(alone.final_prob, abs=1e-5)


def _batch_counters(client: TritonScoringClient, model: str) -> tuple[dict[int, int], int, int]:
    """Executions per batch size, inferences and executions so far: the server's statistics
    are cumulative since it started, so a test compares two readings."""
    [stats] = client.statistics(model)
    executions = {
        int(b["batch_size"]): int(b.get("compute_infer", {}).get("count", 0)) for b in stats.get("batch_stats", [])
    }
    return executions, int(stats.get("inference_count", 0)), int(stats.get("execution_count", 0))


def test_concurrent_requests_are_batched_by_triton(triton_server):
    client = triton_server.client()
    texts = [f"message number {i} " + "word " * (i % 7) for i in range(12)]
    errors: list[BaseException] = []
    models = ("spam_pipeline", "text_classifier")
    before = {model: _batch_counters(client, model) for model in models}

    def worker(chunk: list[str]) -> None:
        own = triton_server.client()
        try:
            # A new text every round: spam_pipeline's score cache would answer repeats
            # without reaching text_classifier.
            for round_ in range(3):
                own.score([_row(f"{t} round {round_}") for t in chunk], mode="concurrent")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(texts[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    # Every client request carried one row, so an execution of more rows in this window (the
    # difference of two readings; earlier tests' multi-row requests are in both) is the dynamic
    # batcher's work.
    for model in models:
        (old_runs, old_inferences, old_executions) = before[model]
        runs, inferences, executions = _batch_counters(client, model)
        batched = {size: n - old_runs.get(size, 0) for size, n in runs.items() if size > 1}
        assert any(n > 0 for n in batched.values()), f"{model} batched no concurrent requests: {batched}"
        assert inferences - old_inferences > executions - old_executions


def test_http_protocol_gives_the_same_answer(triton_server):
    row = _row("free entry in a weekly competition", preview="terms apply")
    [grpc_out] = triton_server.client("grpc").score([row])
    [http_out] = triton_server.client("http").score([row])
    assert http_out.final_prob == pytest.approx(grpc_out.final_prob, abs=1e-6)
    for model, values in grpc_out.contributions.items():
        assert http_out.contributions[model] == pytest.approx(values, abs=1e-6)
    assert http_out.model_versions == grpc_out.model_versions


def test_metrics_endpoint_exposes_inference_counters(triton_settings):
    client = get_client()
    client.score([_row("metrics please")])
    text = client.metrics_text()
    assert 'nv_inference_count{model="spam_pipeline"' in text
    assert "nv_inference_queue_duration_us" in text


def test_wrong_vector_length_is_a_request_error(triton_server):
    bad = ScoringInput(text="x", preview_text="", link=[0.0] * 3, behaviour=[0.0] * len(BEHAVIOUR_FEATURES))
    with pytest.raises(TritonError):
        triton_server.client().score([bad])


def test_server_down_raises_unavailable(settings):
    _, grpc, metrics = free_ports(3)
    settings.TRITON_METRICS_PORT = metrics
    for protocol in ("grpc", "http"):
        client = TritonScoringClient(f"127.0.0.1:{grpc}", protocol=protocol, timeout_s=2.0)
        assert client.is_ready() is False
        with pytest.raises(TritonUnavailable):
            client.score([_row("anyone there?")])
        with pytest.raises(TritonUnavailable):
            client.metrics_text()


def test_new_version_loads_without_restart_then_rolls_back(tmp_path: Path, settings):
    """Private server: publish v2 into the live repository, load it, requests report v2;
    roll back (v1's files as v3), load, the v1 score comes back. Also drives the command."""
    with start_tiny_triton(tmp_path / "srv", seed=0) as server:
        settings.TRITON_MODEL_REPOSITORY = server.repository
        settings.TRITON_LOG_DIR = tmp_path / "srv" / "log"
        settings.TRITON_HTTP_PORT = server.config.http_port
        settings.TRITON_GRPC_PORT = server.config.grpc_port
        settings.TRITON_METRICS_PORT = server.config.metrics_port
        settings.TRITON_URL = server.grpc_url
        from scoring.serving import reset_clients

        reset_clients()
        client = server.client()
        row = _row("limited offer: reply YES to claim", preview="claim now")
        [v1] = client.score([row])
        assert v1.model_versions["text_classifier"] == "1"

        # Score continuously while the new versions load: no request may fail (no downtime).
        stop = threading.Event()
        seen: list[str] = []
        failures: list[BaseException] = []

        def keep_scoring() -> None:
            own = server.client()
            while not stop.is_set():
                try:
                    seen.append(own.score([row])[0].model_versions["text_classifier"])
                except BaseException as exc:
                    failures.append(exc)

        scorer = threading.Thread(target=keep_scoring)
        scorer.start()
        v2_artifacts = cached_tiny_artifacts(seed=1)
        try:
            call_command("publish_models", text=v2_artifacts.text, tabular=v2_artifacts.tabular)
        finally:
            stop.set()
            scorer.join(timeout=30)
        assert not failures, failures[:3]
        assert seen and seen[0] == "1"
        [v2] = client.score([row])
        assert {k: v for k, v in v2.model_versions.items() if k != "spam_pipeline"} == {
            "tokenizer": "2",
            "text_classifier": "2",
            "link_model": "2",
            "behaviour_model": "2",
            "fusion_model": "2",
        }
        assert v2.text_prob != pytest.approx(v1.text_prob, abs=1e-6)
        assert int(server.pid) == int(server.config.pid_file.read_text())  # same process throughout

        rolled = model_repository.rollback("text_classifier", 1, repository=server.repository)
        # The pipeline bundles the tokenizer it runs: a rollback writes its new bundle too.
        assert rolled == {"tokenizer": 3, "text_classifier": 3, "spam_pipeline": 3}
        for model in rolled:
            client.load_model(model)
        [v3] = client.score([row])
        assert v3.model_versions["text_classifier"] == "3"
        assert v3.text_prob == pytest.approx(v1.text_prob, abs=1e-6)
        infos = model_repository.list_versions("text_classifier", repository=server.repository)
        assert [i.rollback_of for i in infos] == [None, None, 1]

        call_command("triton", "status")
        call_command("triton", "stop")
        with pytest.raises(TritonUnavailable):
            client.score([row])
        reset_clients()


def test_features_by_name_equal_features_by_position(triton_settings):
    row = _row("call now", seed=4)
    named = ScoringInput(
        text=row.text,
        preview_text=None,
        link=dict(zip(LINK_FEATURES, row.link_vector(), strict=True)),
        behaviour=dict(zip(BEHAVIOUR_FEATURES, row.behaviour_vector(), strict=True)),
    )
    by_position, by_name = get_client().score([row, named])
    assert by_name == by_position
    with pytest.raises(TritonError, match="missing features"):
        get_client().score([ScoringInput(text="x", preview_text=None, link={}, behaviour=row.behaviour)])
    assert get_client(timeout_s=0.5).timeout_s == 0.5
    assert _single_client(timeout_s=0.5)._client is _single_client()._client


def test_tokenizer_model_matches_the_hugging_face_tokenizer(triton_server):
    """Training tokenizes with AutoTokenizer(truncation=True, max_length); the served
    tokenizer (tokenizers library on tokenizer.json) must give the same ids, unpadded."""
    import numpy as np
    import tritonclient.grpc as grpcclient
    from transformers import AutoTokenizer

    from modelops.tiny import TINY_MAX_LENGTH

    reference = AutoTokenizer.from_pretrained(str(triton_server.artifacts.text))
    client = grpcclient.InferenceServerClient(triton_server.grpc_url)
    texts = ["Hello WORLD!", "FREE entry: txt WIN to 80086 now £1000 cash", "word " * 100, "naïve café déjà vu", ""]
    for text in texts:
        tensor = grpcclient.InferInput("TEXT", [1, 1], "BYTES")
        tensor.set_data_from_numpy(np.array([[text.encode()]], dtype=np.object_))
        result = client.infer("tokenizer", [tensor])
        expected = reference(text, truncation=True, max_length=TINY_MAX_LENGTH)["input_ids"]
        assert result.as_numpy("input_ids").tolist() == [expected]
        assert result.as_numpy("attention_mask").tolist() == [[1] * len(expected)]


def test_http_setting_switches_to_the_http_port(triton_settings):
    from scoring.serving import reset_clients

    triton_settings.TRITON_PROTOCOL = "http"
    reset_clients()
    client = _single_client()
    assert client.protocol == "http"
    assert client.url.endswith(f":{triton_settings.TRITON_HTTP_PORT}")
    assert client.is_ready()
    assert client.model_versions()["spam_pipeline"] == "1"


def _direct(client, model: str, inputs: dict, outputs: list[str]) -> dict:
    import tritonclient.grpc as grpcclient

    tensors = []
    for name, array in inputs.items():
        dtype = "BYTES" if array.dtype == object else ("INT64" if array.dtype.kind == "i" else "FP32")
        tensor = grpcclient.InferInput(name, list(array.shape), dtype)
        tensor.set_data_from_numpy(array)
        tensors.append(tensor)
    result = client.infer(model, tensors, outputs=[grpcclient.InferRequestedOutput(o) for o in outputs])
    return {o: result.as_numpy(o) for o in outputs}


def test_tree_scores_equal_xgboosts_own_prediction(triton_server):
    """The trees' PROB is the sigmoid of their contributions' sum (one walk of the trees, not
    two): it must equal what XGBoost itself predicts from the served booster, to float32 noise,
    from the standalone models and from inside spam_pipeline (a left-out bias
    column fails it)."""
    import tritonclient.grpc as grpcclient
    import xgboost as xgb

    client = grpcclient.InferenceServerClient(triton_server.grpc_url)
    rows = [_row(f"message {seed}", seed=seed) for seed in range(6)]
    outs = triton_server.client().score(rows)
    widths = {"link_model": len(LINK_FEATURES), "behaviour_model": len(BEHAVIOUR_FEATURES)}
    widths["fusion_model"] = len(FUSION_FEATURES)
    vectors = {
        "link_model": [r.link_vector() for r in rows],
        "behaviour_model": [r.behaviour_vector() for r in rows],
        "fusion_model": [[((i * 5 + seed) % 10) / 10 for i in range(widths["fusion_model"])] for seed in range(6)],
    }
    for model, batch in vectors.items():
        folder = max(
            (p for p in (triton_server.repository / model).iterdir() if p.name.isdigit()), key=lambda p: int(p.name)
        )
        booster = xgb.Booster(model_file=str(folder / "model.json"))
        x = np.asarray(batch, dtype=np.float32)
        expected = booster.predict(xgb.DMatrix(x, feature_names=booster.feature_names))
        served = _direct(client, model, {"FEATURES": x}, ["PROB"])["PROB"].reshape(-1)
        assert served == pytest.approx(expected, abs=1e-5)
        if model != "fusion_model":
            in_pipeline = [getattr(out, model.replace("_model", "_prob")) for out in outs]
            assert in_pipeline == pytest.approx(expected, abs=1e-5)


def test_pipeline_outputs_equal_the_sub_models_called_directly(triton_server):
    """spam_pipeline only routes: every sub-score, contribution and version it returns is what
    tokenizer -> text_classifier (softmax), link_model, behaviour_model and fusion_model give
    when called one row at a time. The trees must match bit for bit; the text score to fp32
    noise (the tiny test model is fp32, whose scores move ~1e-7 with batch composition)."""
    import numpy as np
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(triton_server.grpc_url)
    rows = [
        _row("WINNER!! claim your free prize now", seed=1),
        _row("see you at 5", preview="Cheap pills, best prices, click to order today", seed=2),
        _row("a much longer message " * 12, preview="and a preview " * 20, seed=3),
        _row("ok", seed=4),
    ]
    outs = triton_server.client().score(rows)

    from tokenizers import Tokenizer

    from modelops.text.inference import text_windows

    tokenizer_dir = next(triton_server.repository.glob("spam_pipeline/*/tokenizer"))
    serving = json.loads((tokenizer_dir / "serving.json").read_text())
    full = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    full.no_truncation()
    full.no_padding()

    def classify(feeds: dict) -> float:
        logits = _direct(client, "text_classifier", feeds, ["logits"])["logits"].astype(np.float64)[0]
        exp = np.exp(logits - logits.max())
        return float(exp[1] / exp.sum())

    def text_prob(text: str) -> float:
        """A text that fits: the tokenizer model, then the classifier. A longer one: the maximum
        of the classifier over the pipeline's windows of the untruncated tokens."""
        ids = full.encode(text).ids
        if len(ids) <= serving["max_length"]:
            tok = _direct(
                client,
                "tokenizer",
                {"TEXT": np.array([[text.encode()]], dtype=np.object_)},
                ["input_ids", "attention_mask"],
            )
            return float(np.float32(classify(tok)))
        windows = text_windows(ids, serving["max_length"], serving["max_windows"])
        assert len(windows) > 1
        probs = [
            classify({"input_ids": np.array([w], dtype=np.int64), "attention_mask": np.ones((1, len(w)), np.int64)})
            for w in windows
        ]
        return float(np.float32(max(probs)))

    def trees(model: str, vector: list[float]) -> tuple[float, list[float], str]:
        got = _direct(
            client, model, {"FEATURES": np.array([vector], dtype=np.float32)}, ["PROB", "CONTRIBUTIONS", "VERSION"]
        )
        return float(got["PROB"][0, 0]), [float(v) for v in got["CONTRIBUTIONS"][0]], got["VERSION"][0, 0].decode()

    for row, out in zip(rows, outs, strict=True):
        assert out.text_prob == pytest.approx(text_prob(row.text), abs=1e-6)
        if row.preview_text:
            assert out.preview_prob == pytest.approx(text_prob(row.preview_text), abs=1e-6)
        else:
            assert out.preview_prob is None
        computed = {"text_prob": out.text_prob, "preview_prob": -1.0 if out.preview_prob is None else out.preview_prob}
        for model, vector, prob in (
            ("link_model", row.link_vector(), out.link_prob),
            ("behaviour_model", row.behaviour_vector(), out.behaviour_prob),
        ):
            direct_prob, direct_contrib, version = trees(model, vector)
            assert prob == direct_prob
            assert _as_float32(out.contributions[model].values()) == _as_float32(direct_contrib)
            assert out.model_versions[model] == version
            computed[model.replace("_model", "_prob")] = prob
        raw = {
            **dict(zip(LINK_FEATURES, row.link_vector(), strict=True)),
            **dict(zip(BEHAVIOUR_FEATURES, row.behaviour_vector(), strict=True)),
        }
        fusion = [computed[name] if name in computed else raw[name] for name in FUSION_FEATURES]
        final, contrib, version = trees("fusion_model", fusion)
        assert out.final_prob == final
        assert _as_float32(out.contributions["fusion_model"].values()) == _as_float32(contrib)
        assert out.model_versions["fusion_model"] == version
