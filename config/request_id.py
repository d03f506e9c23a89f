"""Request ids: one id per request, on every log line it causes, in web and worker.

- RequestIdMiddleware takes the caller's X-Request-ID when it is a sane token (1-128 of
  [A-Za-z0-9._:-], so a client cannot inject log syntax), or makes a new one; it answers with
  the id in X-Request-ID.
- The id lives in a context variable; RequestIdFilter (on the log handlers) copies it onto every
  record as `request_id`, where the JSON formatter prints it.
- Celery: a task published while handling a request carries the id in its message headers
  (before_task_publish), and the worker sets it around the task (task_prerun/task_postrun), so
  the worker's lines for the scoring of a post carry the id of the request that sent it.
"""

from __future__ import annotations

import contextvars
import logging
import re
import uuid
from collections.abc import Callable
from typing import Any

from django.core.signals import request_finished
from django.http import HttpRequest, HttpResponse

HEADER = "X-Request-ID"
CELERY_HEADER = "request_id"
_VALID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

current: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")


def accept(value: str | None) -> str:
    """`value` when it is a sane id, else a new one."""
    if value and _VALID.match(value):
        return value
    return uuid.uuid4().hex


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = accept(request.headers.get(HEADER))
        # Not reset on the way out: Django logs 4xx/5xx responses (django.request) after the
        # middleware returned. request_finished clears it (clear_after_request).
        current.set(request_id)
        response = self.get_response(request)
        response[HEADER] = request_id
        return response


def clear_after_request(**_: Any) -> None:
    current.set("")


request_finished.connect(clear_after_request, dispatch_uid="config.request_id.clear")


class RequestIdFilter(logging.Filter):
    """Adds `request_id` to every record (empty outside a request or task)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = current.get()
        return True


# --- Celery: carry the id from the publishing request to the task ----------------------------
def add_to_headers(*, headers: dict[str, Any] | None = None, **_: Any) -> None:
    """before_task_publish: the current request's id into the message headers."""
    request_id = current.get()
    if request_id and headers is not None:
        headers.setdefault(CELERY_HEADER, request_id)


_task_tokens: dict[str, contextvars.Token[str]] = {}


def enter_task(*, task_id: str = "", task: Any = None, **_: Any) -> None:
    """task_prerun: the id of the request that published the task (or the task's own id)."""
    request = getattr(task, "request", None)
    request_id = getattr(request, CELERY_HEADER, None) or (
        request.get(CELERY_HEADER) if isinstance(request, dict) else None
    )
    _task_tokens[task_id] = current.set(accept(request_id or task_id or None))


def leave_task(*, task_id: str = "", **_: Any) -> None:
    token = _task_tokens.pop(task_id, None)
    if token is not None:
        current.reset(token)
