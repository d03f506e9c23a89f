"""Language routing end to end: API ingest, a real Celery worker, the real Triton with the tiny
models. The policy is set to approve everything, so only the language rule can queue a post."""

from __future__ import annotations

import pytest

from moderation.models import Post, PostStatus, UnvalidatedLanguageAction
from scoring.models import Action
from tests.integration.conftest import set_policy, wait_until
from tests.integration.test_pipeline_e2e import SCORED_TIMEOUT, all_scored, payload

pytestmark = pytest.mark.integration

SPANISH_SPAM = "¡Felicidades! Has ganado un iPhone gratis. Haz clic aquí para reclamar tu premio ahora mismo"
ENGLISH_SPAM = "You have won a free phone, call us now to claim the prize we are holding for you"


def _ingest(api, n: int, text: str) -> Post:
    response = api.post("posts", payload(n, text=text))
    assert response.status_code == 201, response.content
    assert response.json()["language"] in ("es", "en")
    return Post.objects.get(pk=response.json()["id"])


def test_spanish_spam_is_queued_with_the_reason_english_goes_as_before(api, worker):
    set_policy(remove=1.0, approve=1.0)  # every score would auto-approve
    spanish, english = _ingest(api, 1, SPANISH_SPAM), _ingest(api, 2, ENGLISH_SPAM)
    assert (spanish.language, english.language) == ("es", "en")
    wait_until(lambda: all_scored([spanish.pk, english.pk]), timeout=SCORED_TIMEOUT, message=worker.log_tail())
    spanish.refresh_from_db()
    english.refresh_from_db()
    assert spanish.status == PostStatus.QUEUED
    score = spanish.scores.get()
    assert score.action == Action.QUEUE and score.routing_reason == "language not validated: es"
    assert score.text_score is not None  # the model still scored it; the policy routed it
    assert english.status == PostStatus.AUTO_APPROVED
    assert english.scores.get().routing_reason == ""


def test_a_source_that_chose_score_only_gets_the_scores_decision(api, worker):
    api.source.unvalidated_language_action = UnvalidatedLanguageAction.SCORE
    api.source.save(update_fields=["unvalidated_language_action"])
    set_policy(remove=1.0, approve=1.0)
    spanish = _ingest(api, 3, SPANISH_SPAM)
    wait_until(lambda: all_scored([spanish.pk]), timeout=SCORED_TIMEOUT, message=worker.log_tail())
    spanish.refresh_from_db()
    assert spanish.status == PostStatus.AUTO_APPROVED
    assert spanish.scores.get().routing_reason == ""
