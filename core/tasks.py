"""A Celery task by its registered name, for a service that publishes a task whose own module
imports that service (tasks take ids and call one service). Importing the tasks module from the
service would make an import circle; the registered name is the wire contract and never changes.
Each app's AppConfig.ready imports its tasks module, so the names are registered in every
process before a service publishes."""

from __future__ import annotations

from typing import Any

from celery import current_app


def task_named(name: str) -> Any:
    """The registered task ``name`` (its ``delay``/``apply_async`` are the task's own, so a test
    that patches ``scoring.tasks.score_batch.delay`` patches this one too)."""
    return current_app.tasks[name]
