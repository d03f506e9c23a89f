"""The JSON log format (python-json-logger): one object per line, for log shippers.

Fields: time, level, logger, process, message, request_id (config.request_id), and whatever a
call passes in `extra` (e.g. post_ids on scoring.batch_scored). Used by settings.LOGGING's
"json" formatter (web, beat) and by config.celery_app for the handlers Celery installs in
workers."""

from __future__ import annotations

from pythonjsonlogger.json import JsonFormatter

FIELDS = "%(asctime)s %(levelname)s %(name)s %(process)d %(message)s %(request_id)s"
RENAMED = {"asctime": "time", "levelname": "level", "name": "logger"}


def json_formatter() -> JsonFormatter:
    return JsonFormatter(FIELDS, rename_fields=RENAMED)
