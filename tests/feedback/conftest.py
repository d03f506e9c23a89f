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
