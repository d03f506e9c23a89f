"""Kicks (scoring.workqueue): one-post-per-request ingest publishes a score_batch message
without ids only when none is pending, and the kicked task scores the oldest waiting posts, kicking
the next one when more are waiting than a batch takes."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from moderation.models import Post, PostStatus
from scoring import tasks, workqueue
from scoring.models import Score
from scoring.services import batching
from scoring.services.batching import score_batch
from scoring.services.inference import TritonUnavailable
from scoring.workqueue import POISON_PREFIX, claim_post
from tests.scoring.pipeline_support import FakeClient, break_scoring_of, down_client, make_post

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clean_cache")]


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """score_batch publishes, recorded instead of sent: "kick" for one without ids."""
    sent: list[str] = []

    def record(*args: object, **kwargs: object) -> None:
        sent.append("kick" if not args and not kwargs else f"score_batch{args}{kwargs}")

    monkeypatch.setattr(tasks.score_batch, "delay", record)
    return sent


def test_a_kick_is_published_once_until_its_task_takes_it(published):
    assert batching.score_kick() is True
    assert batching.score_kick() is False  # pending: the coming task will see these posts
    assert published == ["kick"]
    workqueue.kick_taken()
    assert batching.score_kick() is True
    assert published == ["kick", "kick"]


def test_a_failed_publish_takes_the_mark_back(monkeypatch):
    def broker_down() -> None:
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.score_batch, "delay", broker_down)
    with pytest.raises(ConnectionError):
        batching.score_kick()
    assert cache.get(workqueue.kick_key()) is None  # so the next post tries again at once


def test_the_kicked_task_clears_the_mark_before_it_looks(published):
    """The ordering that makes a skipped publish safe: a post that saw the mark committed
    before the task's query, so the task scores it; a post after the task kicks again."""
    first = make_post(text="hi")
    assert batching.score_kick() is True
    covered = make_post(text="hi")  # ingested while the kick is pending: publishes nothing
    assert batching.score_kick() is False
    client = FakeClient()
    results = score_batch(client=client)
    assert {r.post_id for r in results} == {first.id, covered.id}
    assert not Post.objects.filter(status=PostStatus.RECEIVED).exists()
    assert batching.score_kick() is True  # the mark went with the task
    assert published == ["kick", "kick"]


def test_the_kicked_task_takes_the_oldest_and_kicks_again_when_more_wait(published):
    posts = [make_post(text="hi") for _ in range(7)]
    client = FakeClient()
    first = score_batch(batch_size=3, client=client)
    assert {r.post_id for r in first} == {p.id for p in posts[:3]}
    assert published == ["kick"]  # four more were waiting
    workqueue.kick_taken()
    second = score_batch(batch_size=3, client=client)
    assert {r.post_id for r in second} == {p.id for p in posts[3:6]}
    assert published == ["kick", "kick"]  # the query was full again: one may be left
    workqueue.kick_taken()
    third = score_batch(batch_size=3, client=client)
    assert {r.post_id for r in third} == {posts[6].id}
    assert published == ["kick", "kick"]  # nothing left: no more kicks
    assert score_batch(batch_size=3, client=client) == []
    assert Score.objects.count() == 7


def test_the_kicked_task_leaves_claimed_and_poisoned_posts(published):
    held, poisoned, free = make_post(text="hi"), make_post(text="hi"), make_post(text="hi")
    assert claim_post(held.id, "another-worker")
    cache.set(f"{POISON_PREFIX}{poisoned.id}", 1)
    client = FakeClient()
    results = score_batch(batch_size=3, client=client)
    assert [r.post_id for r in results] == [free.id]
    assert published == []  # everything seen was taken: the other worker scores its post


def test_a_down_model_leaves_the_posts_waiting_for_the_retry(published):
    post = make_post(text="hi")
    with pytest.raises(TritonUnavailable):
        score_batch(client=down_client())
    assert Post.objects.get(pk=post.pk).status == PostStatus.RECEIVED
    assert published == []  # the task's own retry looks again: no kick loop during an outage
    assert score_batch(client=FakeClient())[0].post_id == post.id


def test_a_post_that_breaks_the_kicked_batch_does_not_block_the_others(monkeypatch, published):
    good, bad = make_post(text="hi"), make_post(text="hi")
    break_scoring_of(monkeypatch, bad.id)
    results = score_batch(batch_size=3, client=FakeClient())
    assert [r.post_id for r in results] == [good.id]
    assert Post.objects.get(pk=good.pk).status == PostStatus.AUTO_APPROVED
    assert Post.objects.get(pk=bad.pk).status == PostStatus.RECEIVED  # poisoned, the sweeper's
    assert cache.get(f"{POISON_PREFIX}{bad.id}") == 1


@pytest.mark.parametrize("own_posts", [1, 2])
def test_fillers_given_back_by_a_failed_batch_get_a_kick(monkeypatch, published, own_posts):
    """A task's batch (one post's, or a chunk's) takes waiting posts that may have no task of
    their own (they were covered by a kick); when the batch fails and they go back, a kick
    covers them again."""
    own = [make_post(text="hi") for _ in range(own_posts)]
    filler = make_post(text="hi")
    break_scoring_of(monkeypatch, filler.id)
    results = score_batch(post_ids=[p.id for p in own], batch_size=3, client=FakeClient())
    assert [r.post_id for r in results] == [p.id for p in own]
    assert published == ["kick"]
    assert Post.objects.get(pk=filler.pk).status == PostStatus.RECEIVED


def test_a_head_of_held_posts_does_not_hold_up_the_posts_behind_it(published):
    """The oldest waiting posts all held (a killed worker's claims until they expire) or
    poisoned: the kicked task takes the newest instead; with nothing else waiting it stops,
    it does not kick itself over the held head forever."""
    head = [make_post(text="hi") for _ in range(6)]
    for post in head[:3]:
        assert claim_post(post.id, "killed-worker")
    for post in head[3:]:
        cache.set(f"{POISON_PREFIX}{post.id}", 1)
    behind = [make_post(text="hi") for _ in range(4)]
    client = FakeClient()
    first = score_batch(batch_size=3, client=client)
    assert {r.post_id for r in first} == {p.id for p in behind[1:]}  # the newest three
    assert published == ["kick"]  # a full batch from the newest end: more may wait
    workqueue.kick_taken()
    second = score_batch(batch_size=3, client=client)
    assert [r.post_id for r in second] == [behind[0].id]
    assert published == ["kick"]
    workqueue.kick_taken()
    assert score_batch(batch_size=3, client=client) == []
    assert published == ["kick"]  # only the held head is left: no kick chain
