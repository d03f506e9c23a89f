"""The client of one Triton server (the only module that imports tritonclient). Callers reach
it through scoring.serving, the one serving entry point, which caches the process-wide client
(one server, or a scoring.triton_pool.TritonPool over several):

    from scoring.serving import ScoringInput, get_client
    out = get_client().score([ScoringInput(text=..., preview_text="", link=vec, behaviour=vec)])

gRPC by default (settings.TRITON_PROTOCOL = "http" switches), timeouts from
settings.TRITON_TIMEOUT_S. Failures are either TritonUnavailable (server down, starting,
overloaded, timed out, model not loaded: retry later) or TritonError (the request itself is
wrong: do not retry).

Tensor names and dims are the contract of triton_repository/spam_pipeline/config.pbtxt
(tests/scoring/test_triton_contract.py checks the constants below against it).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np

from contracts.triton import ALL_MODELS, CONTRIBUTIONS, INPUTS, OUTPUTS, PIPELINE_MODEL
from scoring.triton_errors import TritonError, TritonUnavailable
from scoring.triton_types import ScoringInput, ScoringOutput

__all__ = [
    "CONTRIBUTIONS",
    "INPUTS",
    "MAX_BATCH",
    "OUTPUTS",
    "ScoringInput",
    "ScoringOutput",
    "TritonError",
    "TritonScoringClient",
    "TritonUnavailable",
    "float32_decimals",
    "preload",
]

# The server-side cap (spam_pipeline max_batch_size); larger score() calls are chunked.
MAX_BATCH = 32
# load_model/unload_model wait for the model to be ready (stub start, ONNX session): seconds.
CONTROL_TIMEOUT_S = 120.0


_UNAVAILABLE_STATUSES = ("UNAVAILABLE", "DEADLINE_EXCEEDED", "CANCELLED", "RESOURCE_EXHAUSTED", "503", "504")
_UNAVAILABLE_TEXT = (
    "connection refused",
    "failed to connect",
    "connect failed",
    "timed out",
    "timeout",
    "deadline",
    "not ready",
    "unavailable",
    "unknown model",
    "is not found",
    "not loaded",
    "server is shutting down",
    "broken pipe",
    "connection reset",
)


def _translate(exc: BaseException) -> Exception:
    from tritonclient.utils import InferenceServerException

    if isinstance(exc, InferenceServerException):
        status = str(exc.status() or "").upper()
        message = str(exc.message() or exc)
    else:
        status = ""
        message = f"{type(exc).__name__}: {exc}"
    lowered = message.lower()
    if (
        isinstance(exc, OSError | TimeoutError)
        or any(s in status for s in _UNAVAILABLE_STATUSES)
        or any(t in lowered for t in _UNAVAILABLE_TEXT)
    ):
        return TritonUnavailable(message)
    return TritonError(message)


def _grpc_channel_args() -> list[tuple[str, Any]] | None:
    """tritonclient's own channel options plus settings.TRITON_GRPC_LB_POLICY when set.

    "round_robin" with a URL like dns:///triton-headless:8001 makes gRPC resolve every address
    behind the name (a Kubernetes headless Service: one per Triton pod) and spread calls over
    them, re-resolving when pods come and go; without it a channel sticks to one address."""
    from django.conf import settings

    policy = str(getattr(settings, "TRITON_GRPC_LB_POLICY", "") or "")
    if not policy:
        return None  # tritonclient's defaults
    from tritonclient.grpc import MAX_GRPC_MESSAGE_SIZE, KeepAliveOptions

    keepalive = KeepAliveOptions()
    return [
        ("grpc.max_send_message_length", MAX_GRPC_MESSAGE_SIZE),
        ("grpc.max_receive_message_length", MAX_GRPC_MESSAGE_SIZE),
        ("grpc.keepalive_time_ms", keepalive.keepalive_time_ms),
        ("grpc.keepalive_timeout_ms", keepalive.keepalive_timeout_ms),
        ("grpc.keepalive_permit_without_calls", keepalive.keepalive_permit_without_calls),
        ("grpc.http2.max_pings_without_data", keepalive.http2_max_pings_without_data),
        ("grpc.lb_policy_name", policy),
    ]


def _split_url(url: str) -> tuple[str, int | None]:
    hostport = url.split("://", 1)[-1].strip("/")  # dns:///host:port too
    host, _, port = hostport.rpartition(":")
    if not host:
        return hostport, None
    return host, int(port)


@functools.lru_cache(maxsize=64)
def _versions_items(raw: str) -> tuple[tuple[str, str], ...]:
    # Every post of a batch carries the same versions JSON: parsed once, not once per post.
    return tuple((str(k), str(v)) for k, v in json.loads(raw).items())


def _versions(raw: str) -> dict[str, str]:
    return dict(_versions_items(raw))  # a dict of its own per output (callers may change it)


def float32_decimals(values: np.ndarray) -> list[Any]:
    """float32 model outputs as Python floats that print in at most 9 significant digits and
    convert back to the very same float32 values (9 digits always round-trip a float32).

    Why: float(np.float32(x)) is a double whose shortest repr has ~17 digits, and the
    contributions (about 75 per post) are stored as JSON: printing those digits was the
    largest single cost of the scoring worker (18 % of its CPU in json.dumps, py-spy), and they
    carry nothing the float32 had. Vectorized: x rounded to 9 significant digits as k / 10**m,
    with 10**m exact (m <= 22) and k exact, so the quotient is the double nearest that decimal.
    Zeros, non-finite values and magnitudes outside [1e-14, 1e8) are passed through as they are."""
    x = np.asarray(values, dtype=np.float64)
    magnitude = np.abs(x)
    scalable = np.isfinite(x) & (magnitude >= 1e-14) & (magnitude < 1e8)
    exponent = np.floor(np.log10(np.where(scalable, magnitude, 1.0)))
    scale = 10.0 ** (8.0 - exponent)  # 10**1 .. 10**22: exact doubles
    decimals = np.where(scalable, np.round(x * scale) / scale, x)
    floats: list[Any] = decimals.tolist()
    return floats


class TritonScoringClient:
    """Scores posts with spam_pipeline and manages model versions on a running server."""

    def __init__(
        self,
        url: str | None = None,
        *,
        protocol: str | None = None,
        timeout_s: float | None = None,
        metrics_url: str | None = None,
    ) -> None:
        from django.conf import settings

        self.protocol = (protocol or settings.TRITON_PROTOCOL).lower()
        if self.protocol not in ("grpc", "http"):
            raise ValueError(f"TRITON_PROTOCOL must be grpc or http, not {self.protocol!r}")
        self.url = url or settings.TRITON_URL
        if url is None and self.protocol == "http":
            # TRITON_URL defaults to the gRPC port; with TRITON_PROTOCOL=http use the HTTP one.
            host, port = _split_url(self.url)
            if port == settings.TRITON_GRPC_PORT:
                self.url = f"{host}:{settings.TRITON_HTTP_PORT}"
        self.timeout_s = float(timeout_s if timeout_s is not None else settings.TRITON_TIMEOUT_S)
        host, _ = _split_url(self.url)
        self.metrics_url = metrics_url or f"http://{host}:{settings.TRITON_METRICS_PORT}/metrics"
        self._client: Any = self._make_client()
        self._bind_metrics()

    def _bind_metrics(self) -> None:
        # The labelled children once per client, not a label look-up per request.
        from core.metrics import TRITON_ERRORS, TRITON_SECONDS

        self._seconds = TRITON_SECONDS.labels(self.url)
        self._unavailable = TRITON_ERRORS.labels(self.url, "unavailable")
        self._rejected = TRITON_ERRORS.labels(self.url, "rejected")

    def with_timeout(self, timeout_s: float) -> TritonScoringClient:
        """The same connection with another per-call timeout (gRPC: per request; HTTP keeps
        the connection's own network timeout)."""
        clone = copy.copy(self)
        clone.timeout_s = max(float(timeout_s), 0.001)
        return clone

    def _make_client(self) -> Any:
        if self.protocol == "grpc":
            import tritonclient.grpc as grpcclient

            return grpcclient.InferenceServerClient(url=self.url, channel_args=_grpc_channel_args())
        import tritonclient.http as httpclient

        return httpclient.InferenceServerClient(
            url=self.url,
            connection_timeout=self.timeout_s,
            network_timeout=self.timeout_s,
            concurrency=MAX_BATCH,
        )

    @property
    def _mod(self) -> Any:
        if self.protocol == "grpc":
            import tritonclient.grpc as grpcclient

            return grpcclient
        import tritonclient.http as httpclient

        return httpclient

    # ---- scoring ---------------------------------------------------------------------

    def _build_inputs(self, rows: Sequence[ScoringInput]) -> list[Any]:
        n = len(rows)
        arrays = {
            "TEXT": np.array([[r.text.encode("utf-8")] for r in rows], dtype=np.object_),
            "PREVIEW_TEXT": np.array([[(r.preview_text or "").encode("utf-8")] for r in rows], dtype=np.object_),
            "LINK_FEATURES": np.asarray([r.link_vector() for r in rows], dtype=np.float32).reshape(n, -1),
            "BEHAVIOUR_FEATURES": np.asarray([r.behaviour_vector() for r in rows], dtype=np.float32).reshape(n, -1),
        }
        inputs = []
        for name, (dtype, _dims) in INPUTS.items():
            tensor = self._mod.InferInput(name, list(arrays[name].shape), dtype)
            tensor.set_data_from_numpy(arrays[name])
            inputs.append(tensor)
        return inputs

    def _outputs(self) -> list[Any]:
        return [self._mod.InferRequestedOutput(name) for name in OUTPUTS]

    @staticmethod
    def _parse(result: Any, n: int) -> list[ScoringOutput]:
        arrays = {name: result.as_numpy(name) for name in OUTPUTS}
        if any(a is None for a in arrays.values()):
            missing = [k for k, a in arrays.items() if a is None]
            raise TritonError(f"spam_pipeline response lacks {', '.join(missing)}")
        outputs = []
        contribution_rows = {
            model: float32_decimals(arrays[tensor].reshape(n, -1)) for model, (tensor, _) in CONTRIBUTIONS.items()
        }
        for i in range(n):
            contributions = {}
            for model, (_, names) in CONTRIBUTIONS.items():
                values = contribution_rows[model][i]
                contributions[model] = {**dict(zip(names, values[:-1], strict=True)), "bias": values[-1]}
            raw_versions = arrays["MODEL_VERSIONS"][i].reshape(-1)[0]
            versions = _versions(raw_versions.decode() if isinstance(raw_versions, bytes) else str(raw_versions))
            preview = float(arrays["PREVIEW_PROB"][i].reshape(-1)[0])
            unfamiliarity = float(arrays["UNFAMILIARITY"][i].reshape(-1)[0])
            abuse = float(arrays["ABUSE_PROB"][i].reshape(-1)[0])
            outputs.append(
                ScoringOutput(
                    text_prob=float(arrays["TEXT_PROB"][i].reshape(-1)[0]),
                    preview_prob=None if preview < 0 else preview,
                    link_prob=float(arrays["LINK_PROB"][i].reshape(-1)[0]),
                    behaviour_prob=float(arrays["BEHAVIOUR_PROB"][i].reshape(-1)[0]),
                    final_prob=float(arrays["FINAL_PROB"][i].reshape(-1)[0]),
                    contributions=contributions,
                    model_versions=versions,
                    unfamiliarity=None if unfamiliarity < 0 else unfamiliarity,
                    abuse_prob=None if abuse < 0 else abuse,
                    text_model_skipped=bool(arrays["TEXT_MODEL_SKIPPED"][i].reshape(-1)[0]),
                )
            )
        return outputs

    def _infer(self, rows: Sequence[ScoringInput]) -> list[ScoringOutput]:
        inputs = self._build_inputs(rows)
        started = time.perf_counter()
        try:
            if self.protocol == "grpc":
                result = self._client.infer(
                    PIPELINE_MODEL, inputs, outputs=self._outputs(), client_timeout=self.timeout_s
                )
            else:
                result = self._client.infer(PIPELINE_MODEL, inputs, outputs=self._outputs())
        except Exception as exc:
            self._seconds.observe(time.perf_counter() - started)
            error = _translate(exc)
            (self._unavailable if isinstance(error, TritonUnavailable) else self._rejected).inc()
            raise error from exc
        self._seconds.observe(time.perf_counter() - started)
        return self._parse(result, len(rows))

    def score(self, inputs: Sequence[ScoringInput], *, mode: str = "batched") -> list[ScoringOutput]:
        """Score rows in order. mode "batched" (default) sends one request per MAX_BATCH rows:
        one round trip, and spam_pipeline fans the texts out to the text model's dynamic
        batcher itself. mode "concurrent" sends one request per row in parallel (measured
        slower here, kept for benchmarks)."""
        if not inputs:
            return []
        if mode == "concurrent" and len(inputs) > 1:
            return self._score_concurrent(inputs)
        out: list[ScoringOutput] = []
        for start in range(0, len(inputs), MAX_BATCH):
            out.extend(self._infer(inputs[start : start + MAX_BATCH]))
        return out

    def _score_concurrent(self, inputs: Sequence[ScoringInput]) -> list[ScoringOutput]:
        futures: list[Future[list[ScoringOutput]]] = []
        for row in inputs:
            future: Future[list[ScoringOutput]] = Future()
            futures.append(future)
            self._submit_async([row], future)
        out: list[ScoringOutput] = []
        for future in futures:
            try:
                out.extend(future.result(timeout=self.timeout_s + 1.0))
            except TimeoutError as exc:
                raise TritonUnavailable(f"no answer within {self.timeout_s}s") from exc
        return out

    def _submit_async(self, rows: Sequence[ScoringInput], future: Future[list[ScoringOutput]]) -> None:
        inputs = self._build_inputs(rows)
        if self.protocol == "grpc":

            def callback(result: Any, error: Any) -> None:
                if error is not None:
                    future.set_exception(_translate(error))
                    return
                try:
                    future.set_result(self._parse(result, len(rows)))
                except Exception as exc:
                    future.set_exception(exc)

            try:
                self._client.async_infer(
                    PIPELINE_MODEL, inputs, callback, outputs=self._outputs(), client_timeout=self.timeout_s
                )
            except Exception as exc:
                future.set_exception(_translate(exc))
            return
        try:
            handle = self._client.async_infer(PIPELINE_MODEL, inputs, outputs=self._outputs())
        except Exception as exc:
            future.set_exception(_translate(exc))
            return

        def wait() -> None:
            try:
                future.set_result(self._parse(handle.get_result(), len(rows)))
            except Exception as exc:
                future.set_exception(_translate(exc) if not isinstance(exc, TritonError) else exc)

        threading.Thread(target=wait, daemon=True).start()

    # ---- health, versions, control ------------------------------------------------------

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self.protocol == "grpc":
            kwargs.setdefault("client_timeout", self.timeout_s)
        try:
            return getattr(self._client, method)(*args, **kwargs)
        except Exception as exc:
            raise _translate(exc) from exc

    def is_ready(self) -> bool:
        """Server ready and spam_pipeline loaded; never raises."""
        try:
            return bool(self._call("is_server_ready")) and bool(self._call("is_model_ready", PIPELINE_MODEL))
        except (TritonUnavailable, TritonError):
            return False

    def ready_with(self, expected: Mapping[str, str | None] | None) -> bool:
        """The server is ready and every model of `expected` (model -> version, None: any) is
        READY at that version; with no `expected`, every model of ALL_MODELS is READY. Never raises."""
        try:
            if not self._call("is_server_ready"):
                return False
            served = self.model_versions()
        except (TritonUnavailable, TritonError):
            return False
        if expected is None:
            return all(name in served for name in ALL_MODELS)
        return all(name in served and version in (None, served[name]) for name, version in expected.items())

    def repository_index(self) -> list[dict[str, Any]]:
        kwargs = {"as_json": True} if self.protocol == "grpc" else {}
        index = self._call("get_model_repository_index", **kwargs)
        if isinstance(index, dict):
            index = index.get("models", [])
        return [dict(entry) for entry in index]

    def model_versions(self) -> dict[str, str]:
        """model -> the highest READY version on the server (what new requests will use)."""
        versions: dict[str, str] = {}
        for entry in self.repository_index():
            if entry.get("state") == "READY" and entry.get("version"):
                name, version = str(entry["name"]), str(entry["version"])
                if name not in versions or int(version) > int(versions[name]):
                    versions[name] = version
        return versions

    def _control(self, method: str, name: str) -> None:
        """Model control with a long timeout: loading ONNX/tokenizer stubs takes seconds."""
        timeout = max(self.timeout_s, CONTROL_TIMEOUT_S)
        try:
            if self.protocol == "grpc":
                getattr(self._client, method)(name, client_timeout=timeout)
            else:
                import tritonclient.http as httpclient

                control = httpclient.InferenceServerClient(
                    url=self.url, connection_timeout=self.timeout_s, network_timeout=timeout
                )
                try:
                    getattr(control, method)(name)
                finally:
                    control.close()
        except Exception as exc:
            raise _translate(exc) from exc

    def load_model(self, name: str) -> None:
        """(Re)load `name` from the repository: picks up new version folders without a restart;
        the old version keeps serving until the new one is ready."""
        self._control("load_model", name)

    def unload_model(self, name: str) -> None:
        self._control("unload_model", name)

    def statistics(self, name: str = "") -> list[dict[str, Any]]:
        """Per-model inference statistics (counts, batch sizes, queue/compute times)."""
        kwargs = {"as_json": True} if self.protocol == "grpc" else {}
        stats = self._call("get_inference_statistics", name, **kwargs)
        return list(stats.get("model_stats", []))

    def metrics_text(self) -> str:
        """The Prometheus metrics page (nv_inference_count, queue and compute durations...)."""
        try:
            with urllib.request.urlopen(self.metrics_url, timeout=self.timeout_s) as resp:  # noqa: S310
                return str(resp.read().decode("utf-8"))
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            raise TritonUnavailable(f"metrics endpoint {self.metrics_url}: {exc}") from exc

    def close(self) -> None:
        # Closing a dead channel is not an error.
        with contextlib.suppress(Exception):
            self._client.close()


def preload() -> None:
    """Import the tritonclient module of settings.TRITON_PROTOCOL now (web start-up,
    config/warmup.py). The client imports it lazily when first made, and under gunicorn that
    import (grpc + protobuf, ~40 ms alone, up to ~200 ms while other threads run) landed in
    the first pre-publish checks of each process. Imports only: no channel is opened."""
    from django.conf import settings

    importlib.import_module(f"tritonclient.{settings.TRITON_PROTOCOL.lower()}")
