from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from moderation.models import Post, PostStatus
from scoring.models import Score
from scoring.services.batching import PostClaimed, score_batch
from scoring.services.inference import TritonUnavailable
from scoring.services.inline import score_inline
from scoring.sweeper import stuck_post_ids
from scoring.workqueue import claim_key, claim_post, claim_posts, done_key, posts_done, release_posts
from tests.scoring.pipeline_support import FakeClient, break_scoring_of, down_client, make_post

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clean_cache")]


def test_a_task_scores_its_post_with_other_waiting_posts():
    posts = [make_post(text="hi") for _ in range(5)]
    client = FakeClient()
    results = score_batch(post_ids=[posts[-1].id], batch_size=3, client=client)
    assert [len(c) for c in client.calls] == [3]
    assert posts[-1].id in {r.post_id for r in results}
    assert Score.objects.count() == 3
    # the task of a post still waiting drains the rest, then tasks of scored posts do nothing
    waiting = Post.objects.filter(status=PostStatus.RECEIVED).values_list("id", flat=True)
    assert len(waiting) == 2
    score_batch(post_ids=[waiting[0]], batch_size=3, client=client)
    assert Score.objects.count() == 5
    assert score_batch(post_ids=[posts[1].id], batch_size=3, client=client)[0].skipped == "done"
    assert len(client.calls) == 2


def test_a_task_whose_post_a_batch_scored_returns_on_the_marker_without_a_query(django_assert_num_queries):
    posts = [make_post(text="hi") for _ in range(3)]
    score_batch(post_ids=[posts[0].id], batch_size=3, client=FakeClient())
    assert posts_done([p.id for p in posts]) == {p.id for p in posts}
    with django_assert_num_queries(0):
        assert score_batch(post_ids=[posts[2].id], client=FakeClient())[0].skipped == "done"
    # without the marker (expired, Redis flushed) the database answers
    cache.delete(done_key(posts[2].id))
    with django_assert_num_queries(1):
        assert score_batch(post_ids=[posts[2].id], client=FakeClient())[0].skipped == "not_pending"


def test_a_task_after_a_report_reads_the_post_despite_the_marker():
    post = make_post(text="hi")
    score_batch(post_ids=[post.id], client=FakeClient())
    assert posts_done([post.id]) == {post.id}
    from moderation.models import Report

    Report.objects.create(post=post, reporter_id="r", reason="spam")
    Post.objects.filter(pk=post.pk).update(report_count=1)
    assert score_batch(post_ids=[post.id], client=FakeClient())[0].skipped == "done"
    client = FakeClient()
    result = score_batch(post_ids=[post.id], client=client, after_report=True)[0]
    assert result.skipped != "done"
    assert len(client.calls) == 1  # re-scored with the report


def test_a_failed_batch_marks_nothing_done():
    post = make_post(text="hi")
    with pytest.raises(TritonUnavailable):
        score_batch(post_ids=[post.id], client=down_client())
    assert posts_done([post.id]) == set()


def test_release_leaves_a_claim_another_holder_took_after_expiry():
    post = make_post(text="hi")
    assert claim_post(post.id, "slow-worker")
    cache.delete(claim_key(post.id))  # the slow worker's claim expired...
    assert claim_post(post.id, "new-worker")  # ...and another worker took the post
    assert release_posts([post.id], "slow-worker") == 0
    assert cache.get(claim_key(post.id)) == "new-worker"
    assert release_posts([post.id], "new-worker") == 1
    assert cache.get(claim_key(post.id)) is None


def test_release_compares_each_claim_of_a_batch():
    a, b, c = (make_post(text="hi") for _ in range(3))
    assert claim_posts([a.id, b.id], "mine") == [a.id, b.id]
    assert claim_post(c.id, "theirs")
    assert release_posts([a.id, b.id, c.id], "mine", done=[a.id]) == 2
    assert cache.get(claim_key(c.id)) == "theirs"
    assert posts_done([a.id, b.id, c.id]) == {a.id}


def test_a_chunk_task_scores_its_posts_in_one_call_and_marks_them_done():
    posts = [make_post(text="hi") for _ in range(4)]
    client = FakeClient()
    ids = [p.id for p in posts[:3]]
    results = score_batch(post_ids=ids, batch_size=3, client=client)
    assert [len(c) for c in client.calls] == [3]
    assert {r.post_id for r in results} == set(ids)
    assert posts_done(ids) == set(ids)
    assert Post.objects.get(pk=posts[3].pk).status == PostStatus.RECEIVED
    # redelivered: nothing to do, no model call
    assert {r.skipped for r in score_batch(post_ids=ids, batch_size=3, client=client)} == {"done"}
    assert len(client.calls) == 1


def test_a_small_chunk_fills_its_batch_with_other_waiting_posts():
    posts = [make_post(text="hi") for _ in range(4)]
    client = FakeClient()
    score_batch(post_ids=[posts[3].id], batch_size=4, client=client)
    assert [len(c) for c in client.calls] == [4]
    assert not Post.objects.filter(status=PostStatus.RECEIVED).exists()
    assert Score.objects.count() == 4


def test_a_chunk_with_a_post_another_worker_holds_scores_the_rest_and_retries():
    mine, theirs = make_post(text="hi"), make_post(text="hi")
    assert claim_post(theirs.id, "other-worker")
    client = FakeClient()
    with pytest.raises(PostClaimed):
        score_batch(post_ids=[mine.id, theirs.id], batch_size=2, client=client)
    assert [len(c) for c in client.calls] == [1]
    assert Post.objects.get(pk=mine.pk).status == PostStatus.AUTO_APPROVED
    assert cache.get(claim_key(theirs.id)) == "other-worker"
    release_posts([theirs.id], "other-worker")
    score_batch(post_ids=[mine.id, theirs.id], batch_size=2, client=client)  # the retry
    assert [len(c) for c in client.calls] == [1, 1]
    assert Score.objects.filter(post_id__in=[mine.id, theirs.id]).count() == 2


def test_a_post_claimed_by_another_worker_is_retried_not_dropped():
    post = make_post(text="hi")
    cache.add(claim_key(post.id), "other-worker", timeout=30)
    with pytest.raises(PostClaimed):
        score_batch(post_ids=[post.id], client=FakeClient())
    cache.delete(claim_key(post.id))
    score_batch(post_ids=[post.id], client=FakeClient())
    assert Post.objects.get(pk=post.pk).status == PostStatus.AUTO_APPROVED


def test_claimed_posts_are_skipped_by_other_batches_and_claims_are_released():
    mine, theirs = make_post(text="hi"), make_post(text="hi")
    cache.add(claim_key(theirs.id), "other-worker", timeout=30)
    client = FakeClient()
    score_batch(post_ids=[mine.id], batch_size=10, client=client)
    assert [len(c) for c in client.calls] == [1]
    assert cache.get(claim_key(mine.id)) is None


def test_claims_are_released_when_triton_is_down():
    post = make_post(text="hi")
    with pytest.raises(TritonUnavailable):
        score_batch(post_ids=[post.id], client=down_client())
    assert cache.get(claim_key(post.id)) is None


def test_sweeper_finds_posts_stuck_in_received():
    old = make_post(text="hi", received_at=timezone.now() - timedelta(minutes=10))
    make_post(text="hi")  # fresh: its task is probably still queued
    scored = make_post(text="hi", received_at=timezone.now() - timedelta(minutes=10), status=PostStatus.QUEUED)
    ids = stuck_post_ids(older_than_s=300)
    assert ids == [old.id]
    assert scored.id not in ids


def test_inline_within_budget_returns_the_score():
    post = make_post(text="spam")
    score = score_inline(post=post, budget_ms=2000, client=FakeClient())
    assert score is not None and score.final_score == 0.95
    assert post.status == PostStatus.AUTO_REMOVED  # the caller's instance is refreshed


def test_inline_past_the_budget_returns_none_and_leaves_the_post_to_the_task():
    post = make_post(text="spam")
    assert score_inline(post=post, budget_ms=2000, client=down_client()) is None  # timeout / down
    assert score_inline(post=post, budget_ms=0, client=FakeClient()) is None
    post.refresh_from_db()
    assert post.status == PostStatus.RECEIVED
    assert not Score.objects.exists()


def test_inline_short_circuit_needs_no_model():
    from moderation.models import ListStatus
    from tests.scoring.pipeline_support import make_link

    post = make_post(link=make_link(domain="blocked.example", status=ListStatus.BLOCK), text="x")
    client = FakeClient()
    score = score_inline(post=post, budget_ms=1000, client=client)
    assert score is not None and score.model_set == "short_circuit"
    assert client.calls == []


def test_score_post_on_a_scored_post_with_a_new_report_rescores_it():
    from moderation.models import Report

    post = make_post(text="hi")
    score_batch(post_ids=[post.id], client=FakeClient())
    Report.objects.create(post=post, reporter_id="r", reason="spam")
    Post.objects.filter(pk=post.pk).update(report_count=1)
    # the marker the first batch left does not hide the report from the report's task
    (result,) = score_batch(post_ids=[post.id], client=FakeClient(), after_report=True)
    assert result.action == "queue"
    assert Post.objects.get(pk=post.pk).status == PostStatus.QUEUED
    assert Score.objects.filter(post=post).count() == 2
    assert score_batch(post_ids=[post.id], client=FakeClient(), after_report=True)[0].skipped == "no_new_reports"


def test_policy_v1_is_recreated_when_the_table_was_flushed():
    from scoring.models import DecisionPolicy
    from scoring.services.policy import policy_active

    DecisionPolicy.objects.all().delete()
    assert policy_active().version == 1


def test_inline_leaves_a_post_a_worker_is_scoring_to_the_worker():
    post = make_post(text="spam")
    cache.add(claim_key(post.id), "worker", timeout=30)
    client = FakeClient()
    assert score_inline(post=post, budget_ms=30, client=client) is None  # the worker never answered
    assert client.calls == []


def test_inline_returns_the_workers_score_when_it_lands_within_the_budget(monkeypatch):
    post = make_post(text="spam")
    cache.add(claim_key(post.id), "worker", timeout=30)
    polls = []

    def worker_finishes(seconds):  # the "worker" writes its score while the check waits
        polls.append(seconds)
        if len(polls) == 2:
            cache.delete(claim_key(post.id))
            score_batch(post_ids=[post.id], client=FakeClient())

    monkeypatch.setattr("scoring.services.inline.time.sleep", worker_finishes)
    score = score_inline(post=post, budget_ms=5000, client=FakeClient())
    assert score is not None and score.final_score == 0.95
    assert post.status == PostStatus.AUTO_REMOVED


def test_inline_on_a_post_already_scored_returns_its_score():
    post = make_post(text="spam")
    score_batch(post_ids=[post.id], client=FakeClient())
    client = FakeClient()
    score = score_inline(post=post, budget_ms=1000, client=client)
    assert score is not None and score.post_id == post.id
    assert client.calls == []


def test_a_post_that_breaks_its_batch_does_not_block_the_others(monkeypatch):
    good, bad, later = make_post(text="hi"), make_post(text="hi"), make_post(text="hi")
    break_scoring_of(monkeypatch, bad.id)
    (result,) = score_batch(post_ids=[good.id], batch_size=3, client=FakeClient())  # batch fails, alone ok
    assert result.post_id == good.id and result.score_id is not None
    with pytest.raises(ValueError):
        score_batch(post_ids=[bad.id], batch_size=3, client=FakeClient())
    client = FakeClient()
    score_batch(post_ids=[later.id], batch_size=3, client=client)  # the bad post is left out now
    assert [len(c) for c in client.calls] == [1]
    assert Post.objects.get(pk=later.pk).status == PostStatus.AUTO_APPROVED
    assert Post.objects.get(pk=bad.pk).status == PostStatus.RECEIVED


def test_the_sweeper_requeues_a_stuck_post_once_per_ttl():
    from scoring.sweeper import posts_to_requeue

    stuck = make_post(text="hi", received_at=timezone.now() - timedelta(minutes=10))
    assert posts_to_requeue(older_than_s=300) == [stuck.id]
    assert posts_to_requeue(older_than_s=300) == []


# What one batch costs, whatever its size: the task's own post (1), the candidates (1), the
# posts with author/link/domain/IP, their report stats and link and text counts (1), then the
# write transaction: policy (1), row locks (1), Score insert (1), Post update (1), spam counters
# (author, domain, IP, the source's domain and IP: one statement), webhook rows (insert + read
# back: 2); 10, plus the SAVEPOINT and RELEASE that the test's own transaction turns the write
# transaction into.
BATCH_QUERIES = 10 + 2


@pytest.mark.parametrize("size", [2, 16])
def test_a_batch_costs_the_same_queries_whatever_its_size(size, django_assert_num_queries):
    from tests.scoring.pipeline_support import make_ip, make_link, make_source

    source = make_source(callback_url="https://hooks.example/decisions")
    posts = [
        make_post(source=source, text=f"spam {i}" if i % 2 else f"hi {i}", link=make_link(), ip=make_ip())
        for i in range(size)
    ]
    client = FakeClient()
    with django_assert_num_queries(BATCH_QUERIES):
        results = score_batch(post_ids=[posts[0].id], batch_size=size, client=client)
    assert sorted(r.post_id for r in results if r.score_id is not None) == sorted(p.id for p in posts)
    assert [len(c) for c in client.calls] == [size]


def test_the_chunk_task_checks_its_posts_by_primary_key_only():
    """The pending check must not filter on status in SQL: the planner may then read the whole
    received-posts partial index, dead entries included (scoring.services.batching). A post
    scored meanwhile is still skipped."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    posts = [make_post(text="hi") for _ in range(3)]
    Post.objects.filter(id=posts[0].id).update(status=PostStatus.AUTO_APPROVED)
    client = FakeClient()
    with CaptureQueriesContext(connection) as ctx:
        results = score_batch(post_ids=[p.id for p in posts], batch_size=3, client=client)
    assert {r.post_id for r in results} == {posts[1].id, posts[2].id}
    assert [len(c) for c in client.calls] == [2]
    head = 'SELECT "moderation_post"."id" AS "id", "moderation_post"."status" AS "status" FROM "moderation_post" WHERE'
    sqls = [q["sql"] or "" for q in ctx.captured_queries]
    (check,) = [sql for sql in sqls if sql.startswith(head)]
    assert '"status" =' not in check.split("WHERE", 1)[1]
    assert not any("received" in sql and '"id" IN' in sql for sql in sqls)


def test_after_report_concerns_one_post():
    a, b = make_post(text="hi"), make_post(text="hi")
    for post_ids in ([a.id, b.id], None):
        with pytest.raises(ValueError):
            score_batch(post_ids=post_ids, after_report=True, client=FakeClient())
    assert Post.objects.filter(status=PostStatus.RECEIVED).count() == 2
