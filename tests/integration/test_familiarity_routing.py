"""Familiarity routing end to end: API ingest, a real Celery worker, a real Triton serving the
tiny models with a familiarity reference fitted on SMS texts. The policy approves every score,
so only the familiarity rule can queue a post."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from modelops.model_repository import Artifacts
from modelops.text.data import load_sms_splits
from modelops.text.familiarity import fit_familiarity, save_familiarity
from modelops.tiny import cached_tiny_artifacts
from moderation.models import Post, PostStatus, UnfamiliarTextAction
from scoring.models import Action
from tests.fixtures.triton import TritonTestServer, start_tiny_triton
from tests.integration.conftest import set_policy, wait_until
from tests.integration.test_pipeline_e2e import SCORED_TIMEOUT, all_scored, payload

pytestmark = pytest.mark.integration

UNFAMILIAR = (
    "Mitochondrial oxidative phosphorylation generates adenosine triphosphate through chemiosmotic "
    "gradients across the inner membrane."
)


@pytest.fixture(scope="module")
def familiar_text() -> str:
    """An English SMS of the reference set: its own nearest neighbour."""
    return next(t for t in load_sms_splits().train.texts if len(t.split()) >= 10 and t.isascii())


@pytest.fixture(scope="module")
def triton_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TritonTestServer]:
    """This module's Triton: the tiny models, the text model with a familiarity reference."""
    work = tmp_path_factory.mktemp("familiarity")
    tiny = cached_tiny_artifacts()
    assert tiny.text is not None
    text_dir = work / "text"
    shutil.copytree(tiny.text, text_dir)
    splits = load_sms_splits()
    save_familiarity(fit_familiarity(splits.train.texts, splits.test.texts), Path(text_dir))
    with start_tiny_triton(work, artifacts=Artifacts(text=text_dir, tabular=tiny.tabular)) as server:
        yield server


def _ingest(api, n: int, text: str) -> Post:
    body = payload(n, text=text)
    del body["url"]  # no link: the text is all the evidence
    response = api.post("posts", body)
    assert response.status_code == 201, response.content
    return Post.objects.get(pk=response.json()["id"])


def test_an_unfamiliar_post_is_queued_with_the_reason_a_familiar_one_is_approved(api, worker, familiar_text):
    set_policy(remove=1.0, approve=1.0)  # every score would auto-approve
    unfamiliar, familiar = _ingest(api, 1, UNFAMILIAR), _ingest(api, 2, familiar_text)
    wait_until(lambda: all_scored([unfamiliar.pk, familiar.pk]), timeout=SCORED_TIMEOUT, message=worker.log_tail())
    unfamiliar.refresh_from_db()
    familiar.refresh_from_db()
    assert unfamiliar.status == PostStatus.QUEUED
    score = unfamiliar.scores.get()
    assert score.action == Action.QUEUE
    assert score.routing_reason.startswith("unfamiliar text (")
    assert score.features["unfamiliarity"] >= 1.0
    assert familiar.status == PostStatus.AUTO_APPROVED
    assert familiar.scores.get().routing_reason == ""
    assert familiar.scores.get().features["unfamiliarity"] < 1.0


def test_a_source_that_chose_score_gets_the_scores_decision(api, worker):
    api.source.unfamiliar_text_action = UnfamiliarTextAction.SCORE
    api.source.save(update_fields=["unfamiliar_text_action"])
    set_policy(remove=1.0, approve=1.0)
    post = _ingest(api, 3, UNFAMILIAR)
    wait_until(lambda: all_scored([post.pk]), timeout=SCORED_TIMEOUT, message=worker.log_tail())
    post.refresh_from_db()
    assert post.status == PostStatus.AUTO_APPROVED
    score = post.scores.get()
    assert score.routing_reason == "" and score.features["unfamiliarity"] >= 1.0
