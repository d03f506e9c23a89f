"""text_classifier's latency session (triton_repository/text_classifier/model.py), on a real
Triton: an execution of one long row runs on the LATENCY_THREADS session, anything else on the
one-thread session, and the two give bit-identical logits (a post's score must not depend on
how busy the server was).

A private server: the test reloads text_classifier with other parameters, which the shared
session server must not see."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import requests

from tests.fixtures.triton import TritonTestServer, start_tiny_triton

pytestmark = pytest.mark.integration

ROWS_METRIC = re.compile(r"^text_classifier_rows_total\{([^}]*)\} ([0-9.e+]+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TritonTestServer]:
    with start_tiny_triton(tmp_path_factory.mktemp("latency")) as private:
        yield private


def _reload(server: TritonTestServer, **parameters: str) -> None:
    """text_classifier with these parameters changed and one instance (so the rows metric
    of one stub is what the test reads)."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(server.grpc_url)
    config: dict[str, Any] = client.get_model_config("text_classifier", as_json=True)["config"]
    for key, value in parameters.items():
        config["parameters"][key] = {"string_value": value}
    config["instance_group"] = [{"count": 1, "kind": "KIND_CPU"}]
    client.load_model("text_classifier", config=json.dumps(config), client_timeout=120)


def _rows_by_threads(server: TritonTestServer) -> dict[str, float]:
    text = requests.get(server.metrics_url, timeout=10).text
    rows: dict[str, float] = {}
    for labels, value in ROWS_METRIC.findall(text):
        threads = dict(re.findall(r'(\w+)="([^"]*)"', labels))["threads"]
        rows[threads] = rows.get(threads, 0.0) + float(value)
    return rows


def _logits(server: TritonTestServer, rows: list[list[int]]) -> np.ndarray:
    """One request to text_classifier: rows right-padded to the longest, as the pipeline
    sends them."""
    import tritonclient.grpc as grpcclient

    width = max(len(r) for r in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = r
        mask[i, : len(r)] = 1
    inputs = []
    for name, array in (("input_ids", ids), ("attention_mask", mask)):
        tensor = grpcclient.InferInput(name, list(array.shape), "INT64")
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    client = grpcclient.InferenceServerClient(server.grpc_url)
    result = client.infer("text_classifier", inputs, outputs=[grpcclient.InferRequestedOutput("logits")])
    return np.asarray(result.as_numpy("logits"))


def _ids(length: int, seed: int) -> list[int]:
    body = np.random.default_rng(seed).integers(1000, 29000, size=length - 2)
    return [101, *(int(t) for t in body), 102]


def _delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after if after.get(k, 0.0) != before.get(k, 0.0)}


def test_a_lone_long_row_runs_on_the_latency_session(server: TritonTestServer) -> None:
    _reload(server, LATENCY_THREADS="2", LATENCY_MIN_TOKENS="16")
    steps = [
        ([_ids(40, seed=1)], {"2": 1.0}),  # one long row: both cores
        ([_ids(6, seed=2)], {"1": 1.0}),  # one short row: not worth a second thread
        ([_ids(40, seed=3), _ids(40, seed=4)], {"1": 2.0}),  # rows together: the server is busy
        # A lone long row in its own length group, beside a short one: still a busy server.
        ([_ids(6, seed=5), _ids(40, seed=6)], {"1": 2.0}),
    ]
    for rows, expected in steps:
        before = _rows_by_threads(server)
        _logits(server, rows)
        assert _delta(before, _rows_by_threads(server)) == expected


def test_latency_session_logits_equal_the_one_thread_session(server: TritonTestServer) -> None:
    rows = [_ids(length, seed=length) for length in (16, 23, 40, 57, 64)]
    _reload(server, LATENCY_THREADS="2", LATENCY_MIN_TOKENS="16")
    before = _rows_by_threads(server)
    two_threads = [_logits(server, [r]) for r in rows]
    assert _delta(before, _rows_by_threads(server)) == {"2": float(len(rows))}
    _reload(server, LATENCY_THREADS="0")
    before = _rows_by_threads(server)
    one_thread = [_logits(server, [r]) for r in rows]
    assert _delta(before, _rows_by_threads(server)) == {"1": float(len(rows))}
    for a, b in zip(two_threads, one_thread, strict=True):
        assert np.array_equal(a, b), (a, b)
