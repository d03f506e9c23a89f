"""The Celery application. Tasks live in each app's tasks.py and are autodiscovered."""

import os
from typing import Any

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

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
