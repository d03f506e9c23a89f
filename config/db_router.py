"""Dashboard reads from a PostgreSQL read replica (settings.DATABASE_REPLICA_URL; off when unset).

Only where it is safe:
- only reads of the dashboard's pages: GET/HEAD requests under DATABASE_REPLICA_PATHS
  (default /dashboard/) set a context flag (ReplicaReadsMiddleware) and the router sends the
  reads of that request to the "replica" alias. Ingest, the API, scoring workers, beat and
  every write never read from it: a replica lags, and the pipeline must see the rows it has
  just written;
- only the models of DATABASE_REPLICA_APPS (moderation, scoring, feedback): users and sessions
  come from the primary, so a login is seen at once;
- read-your-writes: a POST under those paths (a decision, a bulk action) sets a short cookie
  and that browser's next DATABASE_REPLICA_PIN_S seconds of pages read from the primary, so a
  moderator does not see the post they just decided as still pending;
- row locks (select_for_update) and writes go to the primary: Django asks db_for_write for
  them.

Hand-written: Django has the router hook but no replica routing of its own, and the
maintained packages for it route every read of a model, which the scoring path cannot take.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db.models import Model
from django.http import HttpRequest, HttpResponse

REPLICA = "replica"
PIN_COOKIE = "db_primary_pin"

_reading_replica: contextvars.ContextVar[bool] = contextvars.ContextVar("reading_replica", default=False)


def replica_configured() -> bool:
    return REPLICA in settings.DATABASES


class ReplicaRouter:
    def db_for_read(self, model: type[Model], **hints: Any) -> str | None:
        if not _reading_replica.get():
            return None
        if model._meta.app_label not in settings.DATABASE_REPLICA_APPS:
            return None
        return REPLICA

    def db_for_write(self, model: type[Model], **hints: Any) -> str | None:
        return "default"

    def allow_relation(self, obj1: Model, obj2: Model, **hints: Any) -> bool | None:
        return True  # the same rows on both: a replica row may refer to a primary one

    def allow_migrate(self, db: str, app_label: str, model_name: str | None = None, **hints: Any) -> bool | None:
        return db != REPLICA


class ReplicaReadsMiddleware:
    """Marks the requests whose reads may come from the replica (see the module docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        on_paths = any(request.path_info.startswith(p) for p in settings.DATABASE_REPLICA_PATHS)
        if not on_paths:
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            response = self.get_response(request)
            response.set_cookie(PIN_COOKIE, "1", max_age=settings.DATABASE_REPLICA_PIN_S, httponly=True, samesite="Lax")
            return response
        token = _reading_replica.set(PIN_COOKIE not in request.COOKIES)
        try:
            return self.get_response(request)
        finally:
            _reading_replica.reset(token)
