# syntax=docker/dockerfile:1
# The moderation platform's images: one multi-stage build, one target per role.
#   docker build --target web     -t moderation-web .      gunicorn on :8000 (also runs migrations)
#   docker build --target worker  -t moderation-worker .   Celery, scoring queue "celery"
#   docker build --target trainer -t moderation-trainer .  Celery, queue "training" (torch, ONNX)
#   docker build --target beat    -t moderation-beat .     Celery beat (run exactly one)
#   docker build --target triton  -t moderation-triton .   NVIDIA's Triton + the python backend's packages
# The model repository is mounted into the triton image (deploy/compose.yaml, deploy/k8s/): CPU
# profile triton_repository/ (python backend), GPU profile deploy/gpu/triton_repository/ with the
# TensorRT plan that deploy/gpu/build_engine.sh builds.
# Not built or run on the development machines (they have no Docker engine): the file is
# linted by hadolint in `make test` (tests/deploy/test_manifests.py).

ARG PYTHON_IMAGE=python:3.11.7-slim-bookworm
# Triton 2.51 = the NGC 24.10 release: the server version the CPU profile runs here.
ARG TRITON_IMAGE=nvcr.io/nvidia/tritonserver:24.10-py3

# --- build: virtualenvs without pip, from wheels only (no compiler needed or shipped) ----------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY requirements/ /tmp/requirements/
RUN python -m venv --without-pip /opt/venv \
    && pip --python /opt/venv/bin/python install --only-binary=:all: -r /tmp/requirements/runtime.txt

FROM build AS build-trainer
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
RUN pip --python /opt/venv/bin/python install --only-binary=:all: \
        --extra-index-url "${TORCH_INDEX_URL}" -r /tmp/requirements/training.txt

# --- runtime: the application on a slim Python, as an unprivileged user ------------------------
FROM ${PYTHON_IMAGE} AS runtime
RUN groupadd --system --gid 10001 app \
    && useradd --system --uid 10001 --gid app --home-dir /app --no-create-home --shell /usr/sbin/nologin app
ENV PATH=/opt/venv/bin:${PATH} \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DJANGO_SETTINGS_MODULE=config.settings.production \
    DJANGO_READ_DOT_ENV_FILE=false \
    LOG_FORMAT=json \
    PROMETHEUS_MULTIPROC_DIR=/tmp/prometheus
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY manage.py ./
COPY config/ config/
COPY core/ core/
COPY contracts/ contracts/
COPY moderation/ moderation/
COPY dashboard/ dashboard/
COPY scoring/ scoring/
COPY modelops/ modelops/
COPY feedback/ feedback/
COPY templates/ templates/
COPY static/ static/
COPY triton_repository/ triton_repository/
COPY deploy/gunicorn.conf.py deploy/gunicorn.conf.py
# Static files are collected at build time (WhiteNoise serves them); the throw-away values only
# satisfy production settings' required variables for this one command.
RUN SECRET_KEY=collectstatic-only ALLOWED_HOSTS=localhost DATABASE_URL=sqlite:////tmp/unused.sqlite3 \
        CELERY_BROKER_URL=redis://localhost:6379/0 REDIS_URL=redis://localhost:6379/1 \
        python manage.py collectstatic --noinput --verbosity 0
USER 10001:10001

FROM runtime AS web
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"]
CMD ["gunicorn", "--config", "deploy/gunicorn.conf.py", "config.wsgi:application"]

FROM runtime AS worker
ENV WORKER_METRICS_PORT=9100
EXPOSE 9100
CMD ["celery", "-A", "config", "worker", "--queues=celery", "--concurrency=2", "--prefetch-multiplier=4", \
     "-O", "fair", "--without-gossip", "--without-mingle", "--loglevel=INFO"]

FROM runtime AS trainer
COPY --from=build-trainer /opt/venv /opt/venv
ENV WORKER_METRICS_PORT=9100
EXPOSE 9100
CMD ["celery", "-A", "config", "worker", "--queues=training", "--concurrency=1", "--prefetch-multiplier=1", \
     "--without-gossip", "--without-mingle", "--loglevel=INFO"]

FROM runtime AS beat
CMD ["celery", "-A", "config", "beat", "--schedule=/tmp/celerybeat-schedule", "--loglevel=INFO"]

# --- triton: the stock server plus what the python-backend models import ------------------------
FROM ${TRITON_IMAGE} AS triton
COPY requirements/triton.txt /tmp/requirements/triton.txt
RUN pip install --no-cache-dir --only-binary=:all: -r /tmp/requirements/triton.txt
# triton-server (uid 1000) is the unprivileged user NVIDIA's image ships.
USER 1000:1000
EXPOSE 8000 8001 8002
# The flags manage.py triton start uses (modelops/triton_server.py), on Triton's stock ports.
# Only what scoring calls (contracts/triton.py served_models, TRITON_STANDALONE_MODELS off):
# spam_pipeline runs its own tokenizer and trees, and each standalone model would add a python
# stub of 50-200 MB. With TRITON_STANDALONE_MODELS=true, add --load-model=tokenizer and the trees.
CMD ["tritonserver", "--model-repository=/models", "--model-control-mode=explicit", \
     "--load-model=text_classifier", "--load-model=spam_pipeline", \
     "--strict-readiness=true", "--exit-on-error=true", "--disable-auto-complete-config", \
     "--allow-metrics=true", "--allow-cpu-metrics=true", "--log-verbose=0"]
