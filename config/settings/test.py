"""Test settings: the real PostgreSQL and Redis of this machine (standard ports)."""

from core.redis_breaker import redis_cache_options

from .base import *  # noqa: F403
from .base import DATABASE_ROUTERS, MIDDLEWARE, add_replica, env

DATABASES = {"default": env.db("DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/moderation")}
add_replica(DATABASES, MIDDLEWARE, DATABASE_ROUTERS)
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CACHE_URL = env("CACHE_URL", default="redis://127.0.0.1:6379/1")
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": CACHE_URL,
        "KEY_PREFIX": env("CACHE_KEY_PREFIX", default="modr-test"),
        "OPTIONS": redis_cache_options(CACHE_URL),
    }
}
CELERY_BROKER_URL = env("CELERY_BROKER_URL", default="redis://127.0.0.1:6379/2")

# Serve static files straight from the app folders (no collectstatic before tests).
WHITENOISE_AUTOREFRESH = True
WHITENOISE_USE_FINDERS = True

# Webhook receivers on this machine (loopback, plain http) are allowed here, never in production.
WEBHOOK_ALLOW_PRIVATE_TARGETS = env.bool("WEBHOOK_ALLOW_PRIVATE_TARGETS", default=True)


# The tests exercise campaign detection, which deployments switch on (off by default).
CAMPAIGN_DETECTION = env.bool("CAMPAIGN_DETECTION", default=True)

# The tests train tiny text models on the SMS collection alone; the benign corpora have their
# own tests (tests/modelops/test_benign_corpora.py).
TEXT_BENIGN_CORPORA = env.list("TEXT_BENIGN_CORPORA", default=[])

# Automatic adaptation rounds stay out of reach of other tests' labels; its own tests lower it.
ADAPTATION_MIN_NEW_LABELS = env.int("ADAPTATION_MIN_NEW_LABELS", default=100_000)
ABUSE_ADAPTATION_MIN_NEW_LABELS = env.int("ABUSE_ADAPTATION_MIN_NEW_LABELS", default=100_000)
# Rounds refit the lexical half unless a test asks for a fine-tune (tests/feedback/test_adaptation.py).
ADAPTATION_FINETUNE_MIN_LABELS = env.int("ADAPTATION_FINETUNE_MIN_LABELS", default=0)

# A promotion's re-score of the waiting queue would publish a task to this suite's broker from
# every promotion test; its own tests switch it on (tests/scoring/test_queue_rescore.py).
QUEUE_RESCORE_AFTER_PROMOTION = env.bool("QUEUE_RESCORE_AFTER_PROMOTION", default=False)

# Every other test states the policy's thresholds for a new source; the earned approval's own tests
# switch it on (tests/scoring/test_earned_approval.py, the routing test through a real worker).
EARNED_APPROVAL = env.bool("EARNED_APPROVAL", default=False)
