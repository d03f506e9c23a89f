"""/healthz and /readyz against the real PostgreSQL, Redis and a real Triton server (tests/fixtures/
triton.py), with one dependency down at a time: a broker or cache URL on a closed port, a Triton
URL where no server listens, a Triton that serves other model versions than the repository's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.fixtures.triton import free_ports

pytestmark = pytest.mark.integration


def closed_port() -> int:
    (port,) = free_ports(1)  # bound and released: nothing listens there now
    return port


def assert_leaks_nothing(body: bytes, *secrets: str) -> None:
    text = body.decode()
    for secret in secrets:
        assert secret not in text, f"{secret!r} leaked in {text}"


def test_healthz_answers_without_io(client):
    # No database mark: any query would raise here.
    response = client.get("/healthz", HTTP_HOST="10.1.2.3:8000")  # a pod IP, not in ALLOWED_HOSTS
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_ready_when_every_dependency_answers(client, db, triton_settings):
    response = client.get("/readyz", HTTP_HOST="10.1.2.3:8000")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "status": "ok",
        "checks": {"database": "ok", "cache": "ok", "broker": "ok", "triton": "ok"},
    }
    assert response["X-Request-ID"]


def test_readyz_names_a_broker_that_is_down(client, db, triton_settings):
    port = closed_port()
    triton_settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{port}/0"
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["error"]["code"] == "not_ready"
    assert body["error"]["fields"] == {"broker": ["unavailable"]}
    assert response["Retry-After"].isdigit()
    assert_leaks_nothing(response.content, str(port), "127.0.0.1", "Connection", "refused")


def test_readyz_names_a_cache_that_is_down(client, db, triton_settings):
    port = closed_port()
    caches = {**triton_settings.CACHES}
    caches["default"] = {**caches["default"], "LOCATION": f"redis://127.0.0.1:{port}/0"}
    triton_settings.CACHES = caches
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["error"]["fields"] == {"cache": ["unavailable"]}
    assert_leaks_nothing(response.content, str(port))


def test_readyz_names_a_triton_that_is_down(client, db, triton_settings):
    from scoring.serving import reset_clients

    port = closed_port()
    triton_settings.TRITON_URL = f"127.0.0.1:{port}"
    reset_clients()
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["error"]["fields"] == {"triton": ["unavailable"]}
    assert_leaks_nothing(response.content, str(port), "spam_pipeline")


def test_readyz_not_ready_while_triton_serves_other_versions(client, db, triton_settings, triton_server, tmp_path):
    """The repository holds a newer spam_pipeline than the server has loaded (a publish whose
    load_model has not happened, or a server that missed it): not ready."""
    repository: Path = tmp_path / "repository"
    shutil.copytree(triton_server.repository, repository, symlinks=True)
    newest = max(int(p.name) for p in (repository / "spam_pipeline").iterdir() if p.name.isdigit())
    (repository / "spam_pipeline" / str(newest + 1)).mkdir()
    triton_settings.TRITON_MODEL_REPOSITORY = repository
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["error"]["fields"] == {"triton": ["unavailable"]}
    assert_leaks_nothing(response.content, str(newest + 1), str(repository))

    triton_settings.TRITON_MODEL_REPOSITORY = triton_server.repository
    assert client.get("/readyz").status_code == 200


def test_readyz_without_the_repository_needs_every_model_loaded(client, db, triton_settings, tmp_path):
    triton_settings.TRITON_MODEL_REPOSITORY = tmp_path / "not-mounted"
    assert client.get("/readyz").status_code == 200


def test_probes_take_only_get(client):
    response = client.post("/readyz")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_readyz_is_unauthenticated_json(client, db, triton_settings):
    response = client.get("/readyz", HTTP_AUTHORIZATION="Api-Key wrong")
    assert response.status_code == 200
    assert json.loads(response.content)["status"] == "ok"
