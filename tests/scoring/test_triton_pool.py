"""scoring.triton_pool: round robin, failover and down marks (unit tests with stand-in
servers; the real two-server test is tests/faults/test_triton_failover.py), and get_client's
choice between one server and a pool."""

from __future__ import annotations

from typing import Any, cast

import pytest

from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES
from scoring.serving import (
    ScoringInput,
    TritonError,
    TritonScoringClient,
    TritonUnavailable,
    get_client,
    reset_clients,
)
from scoring.triton_pool import TritonPool


class StandIn:
    """The part of TritonScoringClient the pool calls."""

    def __init__(self, url: str, *, fail: Exception | None = None) -> None:
        self.url = url
        self.fail = fail
        self.calls = 0
        self.loaded: list[str] = []
        self.timeout_s = 5.0

    def score(self, inputs: Any, *, mode: str = "batched") -> list[str]:
        self.calls += 1
        if self.fail is not None:
            raise self.fail
        return [f"{self.url}:{x}" for x in inputs]

    def load_model(self, name: str) -> None:
        self.loaded.append(name)

    def with_timeout(self, timeout_s: float) -> StandIn:
        return self


# The stand-ins echo what they are sent, so a plain token stands in for a post.
X = cast(ScoringInput, "x")


def pool(*servers: StandIn, down_s: float = 60.0) -> TritonPool:
    return TritonPool(servers, down_s=down_s)  # type: ignore[arg-type]  # stand-ins for TritonScoringClient


def test_round_robin_over_the_servers():
    a, b = StandIn("a"), StandIn("b")
    p = pool(a, b)
    answers = [p.score([X])[0] for _ in range(4)]
    assert answers == ["a:x", "b:x", "a:x", "b:x"]


def test_a_dead_server_fails_over_in_the_same_call_and_is_skipped_afterwards():
    a, b = StandIn("a", fail=TritonUnavailable("refused")), StandIn("b")
    p = pool(a, b)
    assert [p.score([X])[0] for _ in range(4)] == ["b:x"] * 4
    assert a.calls == 1  # marked down after its one failure
    assert p.down() == ["a"]


def test_a_server_comes_back_after_its_down_mark():
    a, b = StandIn("a", fail=TritonUnavailable("refused")), StandIn("b")
    p = pool(a, b, down_s=0.0)  # the mark ends at once
    p.score([X])
    a.fail = None
    assert {p.score([X])[0] for _ in range(4)} == {"a:x", "b:x"}
    assert p.down() == []


def test_every_server_down_raises_unavailable_after_trying_one():
    a, b = StandIn("a", fail=TritonUnavailable("refused")), StandIn("b", fail=TritonUnavailable("refused"))
    p = pool(a, b)
    with pytest.raises(TritonUnavailable):
        p.score([X])
    assert a.calls + b.calls == 2
    with pytest.raises(TritonUnavailable):  # all marked down: the one whose mark ends first
        p.score([X])
    assert a.calls + b.calls == 3


def test_a_rejected_request_is_not_sent_to_another_server():
    a, b = StandIn("a", fail=TritonError("bad input")), StandIn("b")
    p = pool(a, b)
    with pytest.raises(TritonError):
        p.score([X])
    assert b.calls == 0 and p.down() == []


def test_model_control_goes_to_every_server():
    a, b = StandIn("a"), StandIn("b")
    pool(a, b).load_model("spam_pipeline")
    assert a.loaded == b.loaded == ["spam_pipeline"]


def test_get_client_one_server_or_a_pool(settings):
    settings.TRITON_URLS = []
    reset_clients()
    assert isinstance(get_client(), TritonScoringClient)
    settings.TRITON_URLS = ["127.0.0.1:9", "127.0.0.1:10"]
    reset_clients()
    client = get_client()
    assert isinstance(client, TritonPool)
    assert client.urls == ["127.0.0.1:9", "127.0.0.1:10"]
    assert isinstance(get_client(timeout_s=0.05), TritonPool)
    reset_clients()


@pytest.mark.integration
def test_grpc_round_robin_over_a_dns_name(triton_settings, triton_server):
    """TRITON_GRPC_LB_POLICY=round_robin with a dns:/// URL (Kubernetes: a headless Service
    naming every Triton pod) scores through the real server."""
    from scoring.serving import ScoringInput

    triton_settings.TRITON_GRPC_LB_POLICY = "round_robin"
    triton_settings.TRITON_URL = f"dns:///127.0.0.1:{triton_server.config.grpc_port}"
    reset_clients()
    client = get_client()
    assert isinstance(client, TritonScoringClient)
    [out] = client.score(
        [
            ScoringInput(
                text="win a prize",
                preview_text="",
                link=[0.0] * len(LINK_FEATURES),
                behaviour=[0.0] * len(BEHAVIOUR_FEATURES),
            )
        ]
    )
    assert 0.0 <= out.final_prob <= 1.0
    assert client.ready_with(None)
