"""config.db_router's choices (the real streaming replica: tests/faults/test_read_replica.py)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.contrib.sessions.models import Session

from config.db_router import ReplicaRouter, _reading_replica
from moderation.models import Post
from scoring.models import Score


def test_reads_go_to_the_replica_only_inside_a_dashboard_read():
    router = ReplicaRouter()
    assert router.db_for_read(Post) is None  # ingest, API, workers: the primary
    token = _reading_replica.set(True)
    try:
        assert router.db_for_read(Post) == "replica"
        assert router.db_for_read(Score) == "replica"
        assert router.db_for_read(User) is None  # a login is seen at once
        assert router.db_for_read(Session) is None
        assert router.db_for_write(Post) == "default"
    finally:
        _reading_replica.reset(token)


def test_no_migrations_on_the_replica():
    router = ReplicaRouter()
    assert router.allow_migrate("replica", "moderation") is False
    assert router.allow_migrate("default", "moderation") is True
