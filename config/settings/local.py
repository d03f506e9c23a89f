"""Laptop defaults: SQLite and the embedded Redis that `make run` starts."""

from .base import *  # noqa: F403
from .base import env

DEBUG = env.bool("DEBUG", default=True)

# Webhook receivers on this machine (loopback, plain http) are allowed here, never in production.
WEBHOOK_ALLOW_PRIVATE_TARGETS = env.bool("WEBHOOK_ALLOW_PRIVATE_TARGETS", default=True)
