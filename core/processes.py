"""Whether a process is still running, for the supervisors that watch the servers they start
(modelops.triton_server, scripts/run_local.py). Standard library only: run_local imports it
before anything else is installed."""

from __future__ import annotations

import os
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie. A zombie still answers kill(pid, 0): one
    that is our own child is reaped here; another's is recognised by its /proc state."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass  # not our child: ask procfs
    else:
        return done == 0
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no procfs: trust kill(0)
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")
