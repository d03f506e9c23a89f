"""Laptop defaults: SQLite and the embedded Redis that `make run` starts."""

from .base import *  # noqa: F403
from .base import env

# Debug pages list settings, URL patterns and the environment: only when a developer asks for
# them (DEBUG=1 make run). Otherwise the styled error pages of templates/ (400, 403, 404, 500).
DEBUG = env.bool("DEBUG", default=False)
# Static files straight from the app folders, with or without DEBUG (no collectstatic locally).
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# Webhook receivers on this machine (loopback, plain http) are allowed here, never in production.
WEBHOOK_ALLOW_PRIVATE_TARGETS = env.bool("WEBHOOK_ALLOW_PRIVATE_TARGETS", default=True)
