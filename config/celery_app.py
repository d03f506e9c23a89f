"""The Celery application. Tasks live in each app's tasks.py and are autodiscovered."""

import os
from typing import Any

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
# Celery's Django fixup runs Django's system checks when a worker or beat starts; the URL check
# imports every view, and the ML dashboard's views pull scikit-learn, SciPy, pandas and XGBoost
# (about 120 MB per process) into processes that never serve a page. The web process and
# `manage.py check` run the checks; set CELERY_SKIP_CHECKS= (empty) to run them here too.
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

app = Celery("moderation_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.task_prerun.connect
@signals.task_postrun.connect
def close_old_db_connections(*, task: Any = None, **kwargs: Any) -> None:
    """Around every task, what Django does around every request: drop a connection that saw
    an error or outlived CONN_MAX_AGE, keep the others (settings.CELERY_DB_REUSE_MAX). Not for
    eager tasks: they run inside the caller's transaction (tests), as Celery's fixup skips them."""
    from django.db import close_old_connections

    if task is None or getattr(task.request, "is_eager", False):
        return
    close_old_connections()


# --- request ids (config.request_id) ------------------------------------------------------------
def _connect_request_ids() -> None:
    from config import request_id

    signals.before_task_publish.connect(request_id.add_to_headers, weak=False)
    signals.task_prerun.connect(request_id.enter_task, weak=False)
    signals.task_postrun.connect(request_id.leave_task, weak=False)


_connect_request_ids()


# --- metrics (config.metrics) ---------------------------------------------------------------------
@signals.worker_init.connect
def serve_metrics(**kwargs: Any) -> None:
    """The worker's main process serves every pool process's metrics on WORKER_METRICS_PORT
    (multiprocess mode: PROMETHEUS_MULTIPROC_DIR, wiped here at start)."""
    from django.conf import settings

    from config import metrics

    directory = metrics.multiprocess_dir()
    if directory:
        os.makedirs(directory, exist_ok=True)
        for name in os.listdir(directory):
            if name.endswith(".db"):
                os.unlink(os.path.join(directory, name))
    port = int(getattr(settings, "WORKER_METRICS_PORT", 0) or 0)
    if port:
        metrics.serve_worker_metrics(port)


@signals.worker_process_shutdown.connect
def forget_process_metrics(*, pid: int | None = None, **kwargs: Any) -> None:
    """A pool process that exits (max_tasks_per_child, a kill) leaves its live gauges behind
    unless marked dead; its counters stay counted."""
    from config import metrics

    if metrics.multiprocess_dir():
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid or os.getpid())


# --- JSON logs in workers (settings.LOG_FORMAT) --------------------------------------------------
@signals.after_setup_logger.connect
@signals.after_setup_task_logger.connect
def json_worker_logs(*, logger: Any = None, **kwargs: Any) -> None:
    """Celery replaces the root logger's handlers with its own when a worker starts; with
    LOG_FORMAT=json they get the web's JSON formatter and request-id filter."""
    from django.conf import settings

    from config.logs import json_formatter
    from config.request_id import RequestIdFilter

    if logger is None or getattr(settings, "LOG_FORMAT", "plain") != "json":
        return
    for handler in logger.handlers:
        handler.setFormatter(json_formatter())
        handler.addFilter(RequestIdFilter())
