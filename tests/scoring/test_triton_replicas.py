"""Which Triton replicas model control reaches (scoring.triton_replicas.replica_urls). The DNS
answers below have the shape socket.getaddrinfo returns: (family, type, proto, canonname,
sockaddr). Loading on real replicas is tested in tests/feedback/test_promotion_replicas.py."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from scoring.triton_errors import TritonUnavailable
from scoring.triton_replicas import replica_urls


def headless_service(*addresses: str) -> Any:
    def resolve(host: str, port: int, type: int = 0) -> list[tuple[Any, ...]]:
        assert host == "triton-grpc.moderation.svc.cluster.local" and type == socket.SOCK_STREAM
        answers: list[tuple[Any, ...]] = []
        for a in addresses:
            if ":" in a:
                answers.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (a, port, 0, 0)))
            else:
                answers.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)))
        return answers

    return resolve


DNS_URL = "dns:///triton-grpc.moderation.svc.cluster.local:8001"


def test_a_headless_service_stands_for_every_pod(settings):
    settings.TRITON_REPLICAS = []
    settings.TRITON_URLS = []
    settings.TRITON_URL = DNS_URL
    resolve = headless_service("10.0.3.7", "10.0.1.4", "10.0.3.7", "fd00::9")
    assert replica_urls(resolve=resolve) == ["10.0.1.4:8001", "10.0.3.7:8001", "[fd00::9]:8001"]


def test_explicit_replicas_win_over_the_scoring_address(settings):
    settings.TRITON_URL = "triton:8001"
    settings.TRITON_REPLICAS = ["10.0.0.1:8001", " 10.0.0.2:8001 ", "10.0.0.1:8001"]
    assert replica_urls() == ["10.0.0.1:8001", "10.0.0.2:8001"]


def test_without_replicas_the_scoring_servers_are_used(settings):
    settings.TRITON_REPLICAS = []
    settings.TRITON_URLS = ["a:8001", "b:8001"]
    assert replica_urls() == ["a:8001", "b:8001"]


def test_a_name_that_does_not_resolve_is_unavailable(settings):
    settings.TRITON_REPLICAS = [DNS_URL]

    def fails(host: str, port: int, type: int = 0) -> list[tuple[Any, ...]]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    with pytest.raises(TritonUnavailable, match="cannot resolve"):
        replica_urls(resolve=fails)
    with pytest.raises(TritonUnavailable, match="no Triton replica"):
        replica_urls(resolve=headless_service())
