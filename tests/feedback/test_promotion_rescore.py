"""A promotion or rollback re-scores the waiting queue once it commits (scoring.api
waiting_rescore_on_commit): never before the commit, never after a failed promotion, not when
QUEUE_RESCORE_AFTER_PROMOTION is off. Publishing and loading are replaced here (what a real
Triton serves after a promotion is tests/feedback/test_promotion_e2e.py's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from feedback.models import DatasetVersion, ModelVersion, RunStatus, TrainingRun
from feedback.services import promotion
from feedback.services.datasets import artifacts_dir
from feedback.services.promotion import PromotionFailed, promote_run, rollback_to
from moderation.models import Post, PostStatus
from scoring.models import Score
from scoring.services import queue_rescore
from scoring.services.decide import model_set_of
from scoring.services.scoring import score_posts
from tests.scoring.pipeline_support import MODEL_SET, FakeClient, make_post, model_versions

pytestmark = pytest.mark.django_db

PASSED_GATE = {"gate": {"has_production": True, "suites_compared": 1, "regressions": []}}
TABULAR = ("link_model", "behaviour_model", "fusion_model")


@pytest.fixture
def published(settings: Any, tmp_path: Path, monkeypatch: Any) -> list[int]:
    """No repository to publish into and no Triton to load: each publish answers the next
    version number for the tabular models and the pipeline."""
    settings.TRITON_MODEL_REPOSITORY = tmp_path
    settings.QUEUE_RESCORE_AFTER_PROMOTION = True
    numbers: list[int] = []

    def publish_and_load(write: Any) -> dict[str, int]:
        numbers.append(len(numbers) + 2)
        return {m: numbers[-1] for m in (*TABULAR, promotion.PIPELINE_MODEL)}

    monkeypatch.setattr(promotion, "_publish_and_load", publish_and_load)
    for model in TABULAR:  # version 1's folders, which a rollback to it copies
        (tmp_path / model / "1").mkdir(parents=True)
    ModelVersion.objects.create(
        name="tabular", version=1, triton_versions=dict.fromkeys(TABULAR, 1), is_production=True
    )
    return numbers


@pytest.fixture
def sent(monkeypatch: Any) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(queue_rescore.rescore_waiting_task, "delay", lambda **kw: calls.append(kw))
    return calls


def _run(admin_user: Any) -> TrainingRun:
    (artifacts_dir() / "candidate").mkdir(parents=True, exist_ok=True)  # promotion checks it is there
    dataset = DatasetVersion.objects.create(
        version=1, content_sha256="0" * 64, example_count=0, spam_count=0, ham_count=0, path="unused"
    )
    return TrainingRun.objects.create(
        dataset=dataset,
        scope="tabular",
        status=RunStatus.SUCCEEDED,
        started_by=admin_user,
        candidate_artifacts={"tabular": "candidate"},
        report=PASSED_GATE,
    )


def test_a_promotion_enqueues_the_rescore_on_commit(published, sent, admin_user, django_capture_on_commit_callbacks):
    run = _run(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        (version,) = promote_run(run=run, user=admin_user)
        assert sent == []  # the promotion's transaction has not committed
    assert sent == [{"reason": f"model.promote tabular v{version.version}"}]


def test_a_rollback_enqueues_the_rescore_on_commit(published, sent, admin_user, django_capture_on_commit_callbacks):
    first = ModelVersion.objects.get(name="tabular", version=1)
    promote_run(run=_run(admin_user), user=admin_user)
    sent.clear()
    first.refresh_from_db()

    with django_capture_on_commit_callbacks(execute=True):
        restored = rollback_to(target=first, user=admin_user)

    assert sent == [{"reason": f"model.rollback tabular v{restored.version}"}]


def test_a_failed_promotion_enqueues_nothing(
    published, sent, admin_user, monkeypatch, django_capture_on_commit_callbacks
):
    def fail(write: Any) -> dict[str, int]:
        raise PromotionFailed("Publishing or loading the new version failed; production is unchanged")

    monkeypatch.setattr(promotion, "_publish_and_load", fail)
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(PromotionFailed):
        promote_run(run=_run(admin_user), user=admin_user)
    assert sent == []


def test_switched_off_a_promotion_enqueues_nothing(
    published, sent, admin_user, settings, django_capture_on_commit_callbacks
):
    settings.QUEUE_RESCORE_AFTER_PROMOTION = False
    with django_capture_on_commit_callbacks(execute=True):
        promote_run(run=_run(admin_user), user=admin_user)
    assert sent == []


def test_after_a_promotion_the_waiting_post_carries_the_promoted_versions(
    published, admin_user, monkeypatch, django_capture_on_commit_callbacks
):
    post = make_post(text="maybe a bargain")
    score_posts(post_ids=[post.pk], client=FakeClient())
    assert Post.objects.get(pk=post.pk).model_version == MODEL_SET
    promoted = model_versions("2")  # what Triton reports once the promoted versions serve
    monkeypatch.setattr(queue_rescore, "get_client", lambda: FakeClient(lambda _: 0.7, versions=promoted))
    # A worker of its own runs the task after the commit; here it runs in place.
    monkeypatch.setattr(
        queue_rescore.rescore_waiting_task, "delay", lambda **kw: queue_rescore.rescore_waiting_task.apply(kwargs=kw)
    )

    with django_capture_on_commit_callbacks(execute=True):
        promote_run(run=_run(admin_user), user=admin_user)

    post.refresh_from_db()
    assert post.status == PostStatus.QUEUED and post.final_score == pytest.approx(0.7)
    latest = Score.objects.filter(post=post).order_by("-created_at", "-id").first()
    assert latest is not None and latest.model_versions == promoted
    assert post.model_version == model_set_of(promoted)
