"""Fixtures for the feedback tests: a source, posts with scores, moderators and admins, and an
ARTIFACTS_DIR of their own."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.utils import timezone

from moderation.models import Author, Decision, Post, Source
from moderation.signals import decision_recorded
from scoring.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES
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


def features_for(spammy: bool) -> dict[str, float]:
    values = {name: 0.0 for name in (*LINK_FEATURES, *BEHAVIOUR_FEATURES)}
    values.update(
        {"url_present": 1.0, "user_age_days": 1.0 if spammy else 400.0, "report_count": 3.0 if spammy else 0.0}
    )
    return values


def make_post(
    source: Source, *, author: str | None = None, text: str = "hello", spammy: bool = False, with_score: bool = True
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
        status="queued",
    )
    if with_score:
        Score.objects.create(
            post=post,
            model_set="text:1,link:1,behaviour:1,fusion:1",
            text_score=0.9 if spammy else 0.1,
            preview_score=None,
            link_score=0.8 if spammy else 0.2,
            behaviour_score=0.7 if spammy else 0.3,
            final_score=0.85 if spammy else 0.15,
            action="queue",
            features=features_for(spammy),
            model_versions={"text": 1, "link": 1, "behaviour": 1, "fusion": 1},
        )
    return post


def decide(post: Post, moderator: User, label: str, reason_code: str = "") -> Decision:
    """Record a decision the way the dashboard does (decision_record sends decision_recorded)."""
    try:
        from moderation.services.decisions import decision_record
    except ImportError:
        decision = Decision.objects.create(post=post, moderator=moderator, label=label, reason_code=reason_code)
        decision_recorded.send(sender=Decision, decision=decision, post=post)
        return decision
    return decision_record(post=post, moderator=moderator, label=label, reason_code=reason_code, validate_reason=False)
