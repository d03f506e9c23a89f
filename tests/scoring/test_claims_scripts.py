"""The claim and release scripts (one EVALSHA each, scoring.workqueue) against the real
Redis of the test settings: what a batch claims, what it may release, the done markers and
the inline pending list, and a server that does not know the scripts yet."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.cache import cache

from scoring import workqueue

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clean_cache")]


def _redis():
    found = workqueue._redis()
    assert found is not None, "the test settings use Redis"
    backend, inner = found
    return backend, inner.get_client(None, write=True)


def test_a_batch_claims_only_free_posts_in_order_with_the_claim_ttl():
    assert workqueue.claim_post(12, "other-worker")
    assert workqueue.claim_posts([10, 11, 12, 13], "me") == [10, 11, 13]
    backend, client = _redis()
    ttl = client.ttl(backend.make_key(workqueue.claim_key(10)))
    assert 0 < ttl <= settings.SCORING_CLAIM_TTL_S
    # Claimed is claimed, whichever way one asks: the single claim (cache.add) and the batch agree.
    assert not workqueue.claim_post(10, "late")
    assert workqueue.claim_posts([10, 12, 14], "late") == [14]
    assert cache.get(workqueue.claim_key(10)) == "me"
    assert workqueue.claim_posts([], "me") == []


def test_release_frees_only_the_holders_claims_and_marks_done_posts():
    assert workqueue.claim_posts([1, 2, 3], "me") == [1, 2, 3]
    assert workqueue.claim_post(4, "other-worker")
    assert workqueue.release_posts([1, 2, 4], "me", done=[1, 2]) == 2
    assert cache.get(workqueue.claim_key(4)) == "other-worker"  # not ours: left alone
    assert cache.get(workqueue.claim_key(3)) == "me"  # not released
    assert workqueue.posts_done([1, 2, 3, 4]) == {1, 2}
    backend, client = _redis()
    ttl = client.ttl(backend.make_key(workqueue.done_key(1)))
    assert 0 < ttl <= settings.SCORING_DONE_TTL_S
    assert workqueue.claim_posts([1, 2, 3], "next") == [1, 2]


def test_release_takes_posts_off_the_inline_pending_list():
    assert workqueue.hold_for_inline(7, "web", ttl_s=60, until=100.0)
    assert workqueue.hold_for_inline(8, "web", ttl_s=60, until=100.0)
    assert workqueue.release_posts([7], "web", done=[7], inline_over=[7]) == 1
    assert workqueue.pop_overdue_inline(1e12) == [8]
    assert workqueue.posts_done([7, 8]) == {7}
    # Only the pending list and markers, no claim: still one script, nothing else touched.
    assert workqueue.release_posts([], "web", done=[9], inline_over=[8]) == 0
    assert workqueue.posts_done([9]) == {9}


def test_a_server_without_the_scripts_loaded_still_runs_them():
    _, client = _redis()
    client.script_flush()
    assert workqueue.claim_posts([21, 22], "me") == [21, 22]
    client.script_flush()
    assert workqueue.release_posts([21, 22], "me", done=[21]) == 2
    assert workqueue.posts_done([21, 22]) == {21}
