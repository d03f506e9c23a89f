"""A promotion and a rollback reach every Triton replica: two REAL Triton servers reading one
model repository (the shared volume of the Kubernetes overlays), scoring configured with one of
them only (standing in for the one round-robin address), and TRITON_REPLICAS naming both.
Both must serve the new versions when promote_run / rollback_to return; a replica that does
not answer fails the promotion and leaves production as it was."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from feedback.models import DatasetVersion, ModelVersion, RunStatus, TrainingRun
from feedback.services.promotion import PromotionFailed, promote_run, registry_sync, rollback_to, served_version
from modelops import triton_server as server_control
from modelops.tiny import cached_tiny_artifacts
from scoring.serving import TritonScoringClient, reset_clients
from tests.fixtures.triton import TritonTestServer, free_ports, start_tiny_triton

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
TREES = ("link_model", "behaviour_model", "fusion_model")
PASSED_GATE = {"gate": {"has_production": True, "suites_compared": 1, "regressions": []}}


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TritonTestServer, str]]:
    """(first server, gRPC address of a second server on the same repository)."""
    workdir = tmp_path_factory.mktemp("replicas")
    with start_tiny_triton(workdir / "a", seed=3) as first:
        http, grpc, metrics = free_ports(3)
        second = server_control.ServerConfig(
            repository=first.repository, log_dir=workdir / "b", http_port=http, grpc_port=grpc, metrics_port=metrics
        )
        server_control.start(second, wait_s=180, die_with_parent=True)
        try:
            yield first, second.grpc_url
        finally:
            server_control.stop(second)


@pytest.fixture
def both(settings: Any, replicas: tuple[TritonTestServer, str]) -> Iterator[list[str]]:
    first, second_url = replicas
    settings.TRITON_URL = first.grpc_url  # scoring: one address
    settings.TRITON_URLS = []
    settings.TRITON_REPLICAS = [first.grpc_url, second_url]
    settings.TRITON_PROTOCOL = "grpc"
    settings.TRITON_GRPC_PORT = first.config.grpc_port
    settings.TRITON_HTTP_PORT = first.config.http_port
    settings.TRITON_METRICS_PORT = first.config.metrics_port
    settings.TRITON_MODEL_REPOSITORY = first.repository
    settings.TRITON_STANDALONE_MODELS = True  # the tiny servers load the trees standalone too
    reset_clients()
    yield [first.grpc_url, second_url]
    reset_clients()


def served_by(url: str) -> dict[str, str]:
    client = TritonScoringClient(url)
    try:
        versions = client.model_versions()
    finally:
        client.close()
    return {m: versions[m] for m in (*TREES, "spam_pipeline")}


def candidate_run(admin_user: Any, version: int) -> TrainingRun:
    """A succeeded tabular run whose candidate is the tiny trees (already built for the servers:
    what is checked here is which version each replica serves, not what the trees say)."""
    tabular = cached_tiny_artifacts(seed=3).tabular
    assert tabular is not None
    dataset = DatasetVersion.objects.create(
        version=version, content_sha256="0" * 64, example_count=0, spam_count=0, ham_count=0, path="unused"
    )
    return TrainingRun.objects.create(
        dataset=dataset,
        scope="tabular",
        status=RunStatus.SUCCEEDED,
        started_by=admin_user,
        candidate_artifacts={"tabular": str(Path(tabular).resolve())},
        report=PASSED_GATE,
    )


def test_promotion_and_rollback_are_served_by_every_replica(both, admin_user):
    registry_sync()
    first = ModelVersion.objects.get(name="tabular", is_production=True)
    before = served_by(both[0])
    assert served_by(both[1]) == before

    (promoted,) = promote_run(run=candidate_run(admin_user, 21), user=admin_user)

    # Reported done: each replica already serves the new versions, not only the scoring address.
    expected = {m: str(promoted.triton_versions[m]) for m in TREES}
    for url in both:
        served = served_by(url)
        assert {m: served[m] for m in TREES} == expected, url
        assert int(served["spam_pipeline"]) == int(before["spam_pipeline"]) + 1, url

    first.refresh_from_db()
    restored = rollback_to(target=first, user=admin_user)

    for url in both:
        assert {m: served_by(url)[m] for m in TREES} == {m: str(restored.triton_versions[m]) for m in TREES}, url


def test_a_replica_that_does_not_answer_fails_the_promotion(both, admin_user, settings):
    registry_sync()
    production = ModelVersion.objects.get(name="tabular", is_production=True)
    before = served_by(both[0])
    (closed,) = free_ports(1)
    dead = f"127.0.0.1:{closed}"
    settings.TRITON_REPLICAS = [*both, dead]
    run = candidate_run(admin_user, 22)

    with pytest.raises(PromotionFailed, match="production is unchanged") as failed:
        promote_run(run=run, user=admin_user)

    assert dead in str(failed.value) and both[1] not in str(failed.value)
    # The replicas that loaded the new versions serve the old ones again; the folders are gone,
    # so the dead replica loads the old ones too when it starts; the registry did not move.
    for url in both:
        assert served_by(url) == before, url
    for model in TREES:
        assert served_version(model) == int(before[model])
    assert ModelVersion.objects.get(name="tabular", is_production=True) == production
    assert not ModelVersion.objects.filter(training_run=run).exists()
