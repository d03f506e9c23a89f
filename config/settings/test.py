"""Test settings: the real PostgreSQL and Redis of this machine (standard ports)."""

from .base import *  # noqa: F403
from .base import env

DATABASES = {"default": env.db("DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/moderation")}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": env("CACHE_URL", default="redis://127.0.0.1:6379/1"),
        "KEY_PREFIX": env("CACHE_KEY_PREFIX", default="modr-test"),
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
    }
}
CELERY_BROKER_URL = env("CELERY_BROKER_URL", default="redis://127.0.0.1:6379/2")

# Serve static files straight from the app folders (no collectstatic before tests).
WHITENOISE_AUTOREFRESH = True
WHITENOISE_USE_FINDERS = True
