"""The waiting queue re-scored after a promotion (scoring.services.queue_rescore): new Score rows
from the new model versions through the report re-score's path, the posts a moderator holds or
decided left alone, idempotent, bounded, and Triton failures that leave the posts as they were.
The promotion's side (published on commit) is tests/feedback/test_promotion_rescore.py."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from dashboard.selectors.queue import QueueFilters
from dashboard.selectors.teach import teach_filters, teach_ranking
from moderation.models import Post, PostStatus
from scoring import tasks
from scoring.models import Action, Score
from scoring.services import queue_rescore
from scoring.services.decide import model_set_of
from scoring.services.inference import TritonError, TritonUnavailable
from scoring.services.queue_rescore import UP_TO_DATE, waiting_rescore, waiting_rescore_publish
from scoring.services.scoring import score_posts
from scoring.triton_types import ScoringInput
from tests.scoring.pipeline_support import MODEL_SET, FakeClient, make_post, make_source, model_versions

pytestmark = pytest.mark.django_db

PROMOTED = model_versions("2")
PROMOTED_SET = model_set_of(PROMOTED)


def _by_text(scores: dict[str, float]) -> Any:
    """A model rule: the score of the first key found in the text."""

    def rule(item: ScoringInput) -> float:
        return next(p for key, p in scores.items() if key in item.text)

    return rule


def _queued(*texts: str, score: float = 0.5) -> list[Post]:
    """Posts scored by the version-1 models and waiting for a moderator."""
    source = make_source()
    posts = [make_post(source=source, text=text) for text in texts]
    score_posts(post_ids=[p.pk for p in posts], client=FakeClient(lambda _: score))
    for post in posts:
        post.refresh_from_db()
        assert post.status == PostStatus.QUEUED and post.model_version == MODEL_SET
    return posts


def _promoted(rule: Any = None, **kwargs: Any) -> FakeClient:
    return FakeClient(rule or (lambda _: 0.6), versions=PROMOTED, **kwargs)


def _moderator(name: str = "mod") -> User:
    return User.objects.create_user(username=name, password="pw-123456")


def test_waiting_posts_get_a_score_from_the_promoted_models_and_a_new_priority():
    low, high = _queued("low one", "high one")
    before = {p.pk: (p.final_score, p.priority) for p in (low, high)}

    results = waiting_rescore(client=_promoted(_by_text({"low": 0.3, "high": 0.8})))

    assert {r.post_id for r in results if r.score_id} == {low.pk, high.pk}
    for post, new_score in ((low, 0.3), (high, 0.8)):
        post.refresh_from_db()
        latest = Score.objects.filter(post=post).order_by("-created_at", "-id").first()
        assert latest is not None
        # The next revision under the new model set: the first one for these versions.
        assert (latest.model_set, latest.revision, latest.model_versions) == (PROMOTED_SET, 0, PROMOTED)
        assert latest.final_score == post.final_score == pytest.approx(new_score)
        assert post.status == PostStatus.QUEUED and post.model_version == PROMOTED_SET
        assert post.priority != before[post.pk][1]
        assert Score.objects.filter(post=post, model_set=MODEL_SET).count() == 1  # the old score stays
    low.refresh_from_db()
    high.refresh_from_db()
    assert high.priority > low.priority


def test_the_teach_tab_ranks_by_the_promoted_models_scores():
    near, far = _queued("near one", "far one")
    Post.objects.filter(pk=near.pk).update(final_score=0.55)  # the old model: near the boundary
    Post.objects.filter(pk=far.pk).update(final_score=0.85)
    filters = teach_filters(QueueFilters())
    assert [p.item.post_id for p in teach_ranking(filters=filters)] == [near.pk, far.pk]

    # The promoted model is sure about the first and unsure about the second.
    waiting_rescore(client=_promoted(_by_text({"near": 0.25, "far": 0.6})))

    assert [p.item.post_id for p in teach_ranking(filters=filters)] == [far.pk, near.pk]


def test_a_score_over_the_remove_threshold_removes_as_a_report_rescore_would(
    monkeypatch, django_capture_on_commit_callbacks
):
    spam, fine = _queued("now spam", "still fine")
    published: list[tuple[list[int], str]] = []
    monkeypatch.setattr(
        "scoring.tasks.record_removal_statements.delay", lambda ids, category: published.append((ids, category))
    )

    with django_capture_on_commit_callbacks(execute=True):
        results = {r.post_id: r for r in waiting_rescore(client=_promoted(_by_text({"spam": 0.95, "fine": 0.1})))}

    assert results[spam.pk].status == PostStatus.AUTO_REMOVED and results[spam.pk].action == Action.REMOVE
    assert Post.objects.get(pk=spam.pk).status == PostStatus.AUTO_REMOVED
    # Its statement of reasons goes the way of every automatic removal.
    assert published == [([spam.pk], "spam")]
    # A low score never approves a waiting post: it stays for a human, lower in the queue.
    fine.refresh_from_db()
    assert fine.status == PostStatus.QUEUED and fine.final_score == pytest.approx(0.1)
    assert Score.objects.get(post=fine, model_set=PROMOTED_SET).action == Action.APPROVE


def test_posts_a_moderator_holds_or_decided_are_left_alone():
    claimed, assigned, expired, free, decided, approved = _queued("a", "b", "c", "d", "e", "f")
    moderator = _moderator()
    now = timezone.now()
    Post.objects.filter(pk=claimed.pk).update(claimed_by=moderator, claimed_until=now + timedelta(minutes=5))
    Post.objects.filter(pk=assigned.pk).update(assigned_to=moderator, assigned_at=now)
    Post.objects.filter(pk=expired.pk).update(claimed_by=moderator, claimed_until=now - timedelta(minutes=1))
    Post.objects.filter(pk=decided.pk).update(status=PostStatus.REMOVED)
    Post.objects.filter(pk=approved.pk).update(status=PostStatus.AUTO_APPROVED)

    results = waiting_rescore(client=_promoted(lambda _: 0.95))

    assert {r.post_id for r in results if r.score_id} == {expired.pk, free.pk}
    assert Post.objects.get(pk=expired.pk).status == PostStatus.AUTO_REMOVED
    for post, status in (
        (claimed, PostStatus.QUEUED),
        (assigned, PostStatus.QUEUED),
        (decided, PostStatus.REMOVED),
        (approved, PostStatus.AUTO_APPROVED),
    ):
        after = Post.objects.get(pk=post.pk)
        assert (after.status, after.final_score, after.model_version) == (status, post.final_score, MODEL_SET)
        assert list(Score.objects.filter(post=post).values_list("model_set", flat=True)) == [MODEL_SET]


def test_a_claim_taken_while_the_model_runs_keeps_the_post_with_its_moderator():
    (post,) = _queued("claimed meanwhile")
    moderator = _moderator()

    def claim_then_score(item: ScoringInput) -> float:
        # A moderator claims it after the candidates were picked, before the write.
        Post.objects.filter(pk=post.pk).update(
            claimed_by=moderator, claimed_until=timezone.now() + timedelta(minutes=5)
        )
        return 0.95

    (result,) = waiting_rescore(client=_promoted(claim_then_score))

    assert result.skipped == "owned"
    after = Post.objects.get(pk=post.pk)
    assert (after.status, after.model_version) == (PostStatus.QUEUED, MODEL_SET)
    assert not Score.objects.filter(post=post, model_set=PROMOTED_SET).exists()


def test_a_second_run_writes_nothing_and_asks_the_model_once():
    posts = _queued(*(f"post {i}" for i in range(5)))
    waiting_rescore(client=_promoted(), batch_size=2)
    written = Score.objects.count()

    again = _promoted()
    results = waiting_rescore(client=again, batch_size=2)

    assert Score.objects.count() == written
    assert [len(call) for call in again.calls] == [2]  # the first batch tells the served versions
    assert {r.post_id: r.skipped for r in results} == {p.pk: UP_TO_DATE for p in posts}


def test_batches_and_the_cap_bound_a_run_highest_priority_first():
    posts = _queued(*(f"post {i}" for i in range(5)))
    for rank, post in enumerate(posts):
        Post.objects.filter(pk=post.pk).update(priority=float(rank))
    client = _promoted()

    results = waiting_rescore(client=client, batch_size=2, max_posts=3)

    assert [sorted(i.text for i in call) for call in client.calls] == [["post 3", "post 4"], ["post 2"]]
    assert {r.post_id for r in results if r.score_id} == {posts[4].pk, posts[3].pk, posts[2].pk}
    assert not Score.objects.filter(post__in=posts[:2], model_set=PROMOTED_SET).exists()


def test_the_settings_bound_a_run(settings):
    settings.QUEUE_RESCORE_BATCH = 2
    settings.QUEUE_RESCORE_MAX_POSTS = 3
    _queued(*(f"post {i}" for i in range(4)))
    client = _promoted()
    waiting_rescore(client=client)
    assert [len(call) for call in client.calls] == [2, 1]


def test_triton_down_leaves_the_queue_as_it_was_and_the_task_retries(monkeypatch):
    (post,) = _queued("waiting")
    with pytest.raises(TritonUnavailable):
        waiting_rescore(client=_promoted(fail=TritonUnavailable("connection refused")))
    after = Post.objects.get(pk=post.pk)
    assert (after.final_score, after.model_version) == (post.final_score, MODEL_SET)
    assert Score.objects.filter(post=post).count() == 1
    assert TritonUnavailable in tasks.rescore_waiting.autoretry_for


def test_a_post_the_model_rejects_keeps_its_score_and_the_rest_are_rescored():
    good, bad = _queued("good", "poison")

    def reject(inputs: list[ScoringInput]) -> Exception | None:
        return TritonError("bad input") if any(i.text == "poison" for i in inputs) else None

    results = {r.post_id: r for r in waiting_rescore(client=_promoted(reject=reject))}

    assert results[bad.pk].skipped == "model_error"
    after = Post.objects.get(pk=bad.pk)
    assert (after.status, after.final_score, after.model_version) == (PostStatus.QUEUED, bad.final_score, MODEL_SET)
    assert Score.objects.filter(post=good, model_set=PROMOTED_SET).exists()


def test_the_task_rescores_through_the_service(monkeypatch):
    (post,) = _queued("waiting")
    monkeypatch.setattr(queue_rescore, "get_client", lambda: _promoted())
    assert tasks.rescore_waiting.name == "scoring.rescore_waiting"
    assert tasks.rescore_waiting.acks_late is True
    assert tasks.rescore_waiting.soft_time_limit < tasks.rescore_waiting.time_limit

    assert tasks.rescore_waiting.apply(kwargs={"reason": "model.promote text v2"}).get() == 1
    assert Post.objects.get(pk=post.pk).model_version == PROMOTED_SET
    assert tasks.rescore_waiting.apply().get() == 0  # idempotent


def test_published_on_commit_only_and_not_when_switched_off(settings, monkeypatch, django_capture_on_commit_callbacks):
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(queue_rescore.rescore_waiting_task, "delay", lambda **kw: sent.append(kw))

    settings.QUEUE_RESCORE_AFTER_PROMOTION = False
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        waiting_rescore_publish(reason="model.promote tabular v2")
    assert callbacks == [] and sent == []

    settings.QUEUE_RESCORE_AFTER_PROMOTION = True
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        waiting_rescore_publish(reason="model.promote tabular v2")
        assert sent == []  # not before the commit
    assert len(callbacks) == 1 and sent == [{"reason": "model.promote tabular v2"}]


def test_a_broker_outage_does_not_raise(settings, monkeypatch, django_capture_on_commit_callbacks):
    settings.QUEUE_RESCORE_AFTER_PROMOTION = True

    def down(**kwargs: Any) -> None:
        raise ConnectionError("broker down")

    monkeypatch.setattr(queue_rescore.rescore_waiting_task, "delay", down)
    with django_capture_on_commit_callbacks(execute=True):
        waiting_rescore_publish(reason="model.rollback tabular v3")
