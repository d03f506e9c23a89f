"""Start, stop and inspect the Triton Inference Server that serves triton_repository/.

The binary is the Triton 2.51 build shipped inside nvidia-pytriton (python backend only). It
needs a few things pytriton normally arranges itself:

- one backend folder holding libtriton_python.so, triton_python_backend_utils.py and the stub
  for this Python version (``--backend-directory``);
- LD_LIBRARY_PATH with the interpreter's LIBDIR (the stub links libpython) and the wheel's
  bundled libraries (nvidia_pytriton.libs);
- the venv's bin first on PATH so the stub runs with the venv's packages;
- PYTHONDONTWRITEBYTECODE=1: the stub would otherwise write __pycache__ into version folders,
  which model-control polling reads as a change.

The server runs with ``--model-control-mode=explicit``: new version folders are picked up by
``load_model`` (see modelops/model_repository.py and TritonScoringClient.load_model) without a
restart. It ignores SIGINT when started in the background; SIGTERM is the clean stop.

No tritonclient here (scoring/triton_client.py is the only module importing it): readiness is
a plain HTTP GET on /v2/health/ready.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from contracts.triton import served_models
from core.processes import pid_alive

# Load order matters only for readability of the log: spam_pipeline (BLS) resolves its
# sub-models per request, so it can load before them.
MODEL_NAMES: tuple[str, ...] = (
    "tokenizer",
    "text_classifier",
    "link_model",
    "behaviour_model",
    "fusion_model",
    "spam_pipeline",
)


class TritonServerError(RuntimeError):
    """The server could not be started, or did not become ready in time."""


def _pytriton_root() -> Path:
    import pytriton  # imported lazily: only the server command and the test fixture need it

    return Path(pytriton.__file__).resolve().parent / "tritonserver"


def triton_binary() -> Path:
    return _pytriton_root() / "bin" / "tritonserver"


def prepare_backend_dir(dest: Path) -> Path:
    """Assemble ``dest/python/`` (the layout --backend-directory expects) and return ``dest``."""
    root = _pytriton_root()
    pyver = f"{sys.version_info.major}.{sys.version_info.minor}"
    sources = [
        root / "backends" / "python" / "libtriton_python.so",
        root / "backends" / "python" / "triton_python_backend_utils.py",
        root / "python_backend_stubs" / pyver / "triton_python_backend_stub",
    ]
    target = dest / "python"
    target.mkdir(parents=True, exist_ok=True)
    for src in sources:
        if not src.exists():
            raise TritonServerError(f"missing Triton file {src} (is nvidia-pytriton installed?)")
        out = target / src.name
        if not out.exists() or out.stat().st_size != src.stat().st_size:
            shutil.copy2(src, out)
    return dest


def server_env(base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    wheel_libs = _pytriton_root().parent.parent / "nvidia_pytriton.libs"
    ld = [p for p in (libdir, str(wheel_libs), env.get("LD_LIBRARY_PATH", "")) if p]
    env["LD_LIBRARY_PATH"] = ":".join(ld)
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = venv_bin + os.pathsep + env.get("PATH", "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # Each model instance sizes its own thread pools (ORT intra-op, XGBoost nthread) in its
    # config; stop OpenMP/MKL from spawning one thread per core in every stub on top of that.
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    return env


@dataclass(frozen=True)
class ServerConfig:
    repository: Path
    log_dir: Path
    http_port: int = 8000
    grpc_port: int = 8001
    metrics_port: int = 8002
    models: tuple[str, ...] = MODEL_NAMES
    host: str = "127.0.0.1"
    extra_args: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def from_settings(cls) -> ServerConfig:
        from django.conf import settings

        return cls(
            models=served_models(standalone=settings.TRITON_STANDALONE_MODELS),
            repository=Path(settings.TRITON_MODEL_REPOSITORY),
            log_dir=Path(settings.TRITON_LOG_DIR),
            http_port=settings.TRITON_HTTP_PORT,
            grpc_port=settings.TRITON_GRPC_PORT,
            metrics_port=settings.TRITON_METRICS_PORT,
        )

    @property
    def log_file(self) -> Path:
        return self.log_dir / "triton.log"

    @property
    def pid_file(self) -> Path:
        return self.log_dir / "triton.pid"

    @property
    def backend_dir(self) -> Path:
        return self.log_dir / "triton-backends"

    @property
    def http_url(self) -> str:
        return f"{self.host}:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"{self.host}:{self.grpc_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://{self.host}:{self.metrics_port}/metrics"


def build_command(cfg: ServerConfig, backend_dir: Path) -> list[str]:
    cmd = [
        str(triton_binary()),
        f"--model-repository={cfg.repository}",
        f"--backend-directory={backend_dir}",
        "--model-control-mode=explicit",
        f"--http-port={cfg.http_port}",
        f"--grpc-port={cfg.grpc_port}",
        f"--metrics-port={cfg.metrics_port}",
        f"--http-address={cfg.host}",
        f"--grpc-address={cfg.host}",
        "--allow-metrics=true",
        "--allow-gpu-metrics=false",
        "--allow-cpu-metrics=true",
        "--strict-readiness=true",
        "--exit-on-error=true",
        # config.pbtxt is the contract: no silent auto-completion of missing fields.
        "--disable-auto-complete-config",
        "--log-verbose=0",
    ]
    cmd += [f"--load-model={name}" for name in cfg.models]
    cmd += list(cfg.extra_args)
    return cmd


def is_ready(cfg: ServerConfig, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(f"http://{cfg.http_url}/v2/health/ready", timeout=timeout) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, TimeoutError):
        return False


def read_pid(cfg: ServerConfig) -> int | None:
    try:
        pid = int(cfg.pid_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return pid if pid_alive(pid) else None


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return ""


def _die_with_parent() -> None:
    """preexec_fn: SIGTERM the server when the process that started it dies (test sessions
    killed hard must not leave servers behind). Linux prctl(PR_SET_PDEATHSIG)."""
    import ctypes

    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def start(cfg: ServerConfig, *, wait_s: float = 180.0, die_with_parent: bool = False) -> int:
    """Start the server in the background (own session), wait for readiness, return its pid.

    die_with_parent: tie the server's life to the calling process (test fixtures); the
    management command leaves it False, since it exits right after starting the server."""
    existing = read_pid(cfg)
    if existing is not None:
        if is_ready(cfg):
            return existing
        raise TritonServerError(f"Triton already running (pid {existing}) but not ready; see {cfg.log_file}")
    cfg.log_dir.mkdir(parents=True, exist_ok=True)
    backend_dir = prepare_backend_dir(cfg.backend_dir)
    cmd = build_command(cfg, backend_dir)
    with cfg.log_file.open("ab") as log:
        log.write(f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%S')} starting: {' '.join(cmd)}\n".encode())
        log.flush()
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=server_env(),
            start_new_session=True,
            preexec_fn=_die_with_parent if die_with_parent else None,
        )
    cfg.pid_file.write_text(str(proc.pid))
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            cfg.pid_file.unlink(missing_ok=True)
            raise TritonServerError(f"Triton exited with {proc.returncode}:\n{_tail(cfg.log_file)}")
        if is_ready(cfg):
            return proc.pid
        time.sleep(0.2)
    stop(cfg)
    raise TritonServerError(f"Triton not ready after {wait_s:.0f}s:\n{_tail(cfg.log_file)}")


def stop(cfg: ServerConfig, *, timeout: float = 30.0) -> bool:
    """SIGTERM the server from the pidfile, wait for it to exit (SIGKILL after timeout)."""
    pid = read_pid(cfg)
    if pid is None:
        cfg.pid_file.unlink(missing_ok=True)
        return False
    terminate_pid(pid, timeout=timeout)
    cfg.pid_file.unlink(missing_ok=True)
    return True


def terminate_pid(pid: int, *, timeout: float = 30.0) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(0.1)
    # Triton did not drain in time: kill its whole session (it owns the stub processes).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def status(cfg: ServerConfig) -> dict[str, object]:
    pid = read_pid(cfg)
    return {
        "pid": pid,
        "running": pid is not None,
        "ready": is_ready(cfg),
        "http": cfg.http_url,
        "grpc": cfg.grpc_url,
        "metrics": cfg.metrics_url,
        "repository": str(cfg.repository),
        "log": str(cfg.log_file),
    }


def run_foreground(cfg: ServerConfig, argv: Sequence[str] = ()) -> int:
    """Run attached to the terminal (containers: PID 1 forwards SIGTERM)."""
    cfg.log_dir.mkdir(parents=True, exist_ok=True)
    cmd = build_command(cfg, prepare_backend_dir(cfg.backend_dir)) + list(argv)
    return subprocess.call(cmd, env=server_env())
