"""Production: no silent defaults for secrets, hosts or services; start-up fails without them.

Required: SECRET_KEY, ALLOWED_HOSTS, DATABASE_URL, CELERY_BROKER_URL, REDIS_URL (cache)."""

from core.redis_breaker import redis_cache_options

from .base import *  # noqa: F403
from .base import DATABASE_ROUTERS, LOGGING, MIDDLEWARE, add_replica, env

DEBUG = False
SECRET_KEY = env("SECRET_KEY")  # no default: ImproperlyConfigured when missing
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS")
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
DATABASES = {"default": env.db("DATABASE_URL")}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
add_replica(DATABASES, MIDDLEWARE, DATABASE_ROUTERS)
CELERY_BROKER_URL = env("CELERY_BROKER_URL")
REDIS_URL = env("REDIS_URL")
CACHE_URL = env("CACHE_URL", default=REDIS_URL)
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": CACHE_URL,
        "KEY_PREFIX": env("CACHE_KEY_PREFIX", default="modr"),
        "OPTIONS": redis_cache_options(CACHE_URL),
    }
}

# --- HTTPS and cookies (behind a TLS-terminating proxy that sets X-Forwarded-Proto) ----------
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SESSION_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SECURE = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# --- Static files: hashed names, compressed, served by WhiteNoise after collectstatic --------
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# --- Logging: JSON lines by default; errors of requests go to stderr with their traceback -----
LOG_FORMAT = env("LOG_FORMAT", default="json")
LOGGING["handlers"]["console"]["formatter"] = "json" if LOG_FORMAT == "json" else "plain"
LOGGING["loggers"]["django.request"]["level"] = "ERROR"
# Probes and scrapes speak plain HTTP inside the cluster (config.ops answers them first anyway).
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
