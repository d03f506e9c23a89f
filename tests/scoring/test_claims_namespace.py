"""Claims, done markers and the inline pending list are keyed per database: a database that is
re-created or restored under the same Redis restarts its post ids, and must not see the old
database's markers (a new post would look scored, or claimed, until they expired)."""

from __future__ import annotations

import pytest
from django.db import connection

from scoring import workqueue

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clean_cache")]


def test_the_namespace_is_this_databases_oid():
    with connection.cursor() as cursor:
        cursor.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
        (oid,) = cursor.fetchone()
    assert workqueue.database_namespace() == str(oid)
    assert workqueue.claim_key(7) == f"{workqueue.CLAIM_PREFIX}{oid}:7"


def test_another_databases_markers_and_claims_are_not_seen(monkeypatch):
    post_id = 4242
    assert workqueue.claim_post(post_id, "old-worker")
    workqueue.release_posts([], "old-worker", done=[post_id])
    assert workqueue.posts_done([post_id]) == {post_id}
    assert not workqueue.claim_post(post_id, "someone")

    # The same post id in a re-created database (a new OID) under the same Redis.
    monkeypatch.setattr(workqueue, "database_namespace", lambda: "re-created")
    assert workqueue.posts_done([post_id]) == set()
    assert workqueue.claim_post(post_id, "new-worker")
    assert workqueue.pop_overdue_inline(1e12) == []
