"""`manage.py triton start|stop|status|run`: the Triton server for settings.TRITON_MODEL_REPOSITORY.

start  - background server (own session), waits for /v2/health/ready, pidfile and log in
         settings.TRITON_LOG_DIR (triton.pid, triton.log); loads every model explicitly.
stop   - SIGTERM from the pidfile, waits for a clean exit.
status - pid, readiness, endpoints, and the loaded model versions.
run    - foreground (containers): the process is tritonserver's parent, SIGTERM stops it.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from modelops import triton_server


class Command(BaseCommand):
    help = "Start, stop or inspect the Triton Inference Server serving triton_repository/."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["start", "stop", "status", "run"])
        parser.add_argument("--wait", type=float, default=180.0, help="seconds to wait for readiness")

    def handle(self, *args: Any, **options: Any) -> None:
        cfg = triton_server.ServerConfig.from_settings()
        action = options["action"]
        if action in ("start", "run"):
            _require_versions(cfg)
        if action == "start":
            try:
                pid = triton_server.start(cfg, wait_s=options["wait"])
            except triton_server.TritonServerError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(f"triton ready (pid {pid}) http={cfg.http_url} grpc={cfg.grpc_url} log={cfg.log_file}")
        elif action == "stop":
            stopped = triton_server.stop(cfg)
            self.stdout.write("triton stopped" if stopped else "triton was not running")
        elif action == "status":
            info = triton_server.status(cfg)
            if info["ready"]:
                info["models"] = _loaded_versions()
            self.stdout.write(json.dumps(info, indent=2, default=str))
        else:
            raise SystemExit(triton_server.run_foreground(cfg))


def _require_versions(cfg: triton_server.ServerConfig) -> None:
    from modelops.model_repository import latest_version

    missing = [m for m in cfg.models if latest_version(m, repository=cfg.repository) is None]
    if missing:
        raise CommandError(
            f"no published version of {', '.join(missing)} in {cfg.repository}: "
            "run `manage.py bootstrap_models` (or publish_models) first"
        )


def _loaded_versions() -> dict[str, str] | str:
    from scoring.serving import TritonError, TritonUnavailable, get_client

    try:
        return get_client().model_versions()
    except (TritonUnavailable, TritonError) as exc:
        return f"unavailable: {exc}"
