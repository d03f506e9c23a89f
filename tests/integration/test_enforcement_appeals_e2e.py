"""Enforcement and appeals end to end: API ingest in this process, a real Celery worker on the
real Redis broker and PostgreSQL, a real Triton; the platform's webhooks go to a local
receiver and are checked for their signature."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from feedback.selectors import effective_examples
from moderation.models import Appeal, Author, Domain, ListStatus, Post, PostStatus, ReasonCode, StatementOfReasons
from moderation.services.appeals import appeal_resolve
from moderation.services.blocklists import block_domain_value
from moderation.services.decisions import decision_record
from moderation.services.enforcement import EnforcementReason, author_suspend, list_entry_set
from scoring.models import Score
from scoring.services.webhooks import SIGNATURE_HEADER, verify_signature
from tests.factories import UserFactory
from tests.integration.conftest import Api, set_policy, wait_until
from tests.integration.test_pipeline_e2e import SCORED_TIMEOUT, all_scored, payload, pipeline_inferences
from tests.scoring.webhook_receiver import start_receiver

pytestmark = pytest.mark.integration

SECRET = "integration-secret"


def _post(api: Api, *, author: str, path: str = "posts", **extra: Any) -> dict[str, Any]:
    body = payload(1, **extra)
    body["author"]["external_id"] = author
    response = api.post(path, body)
    assert response.status_code in (201, 202), response.content
    return response.json()


@pytest.fixture(autouse=True)
def reason_codes(pipeline_db: None) -> None:
    # A transactional test flushes the data migration's reason codes: the ones used here again.
    for code, applies_to in (("bot-activity", "spam"), ("phishing", "spam"), ("scam", "spam"), ("legitimate", "ham")):
        ReasonCode.objects.get_or_create(code=code, defaults={"label": code, "applies_to": applies_to})


@pytest.fixture
def receiver(api: Api) -> Any:
    got, server = start_receiver(8263)
    api.source.callback_url = got.url
    api.source.webhook_secret = SECRET
    api.source.save()
    yield got
    server.shutdown()
    server.server_close()


def _events(receiver: Any, count: int, event_type: str) -> list[dict[str, Any]]:
    received = receiver.wait_for(count, timeout=SCORED_TIMEOUT)
    for item in received:
        assert verify_signature(secret=SECRET, header=item.headers[SIGNATURE_HEADER], body=item.body)
    return [e for e in (json.loads(r.body) for r in received) if e["type"] == event_type]


def test_a_suspended_authors_posts_are_held_never_auto_approved(api, worker, receiver):
    set_policy(remove=1.0, approve=1.0)  # the models would approve every post
    moderator = UserFactory(username="mod-it")
    first = _post(api, author="suspect")
    wait_until(lambda: all_scored([first["id"]]), timeout=SCORED_TIMEOUT, message=f"scored\n{worker.log_tail()}")
    assert Post.objects.get(pk=first["id"]).status == PostStatus.AUTO_APPROVED
    author = Author.objects.get(source=api.source, external_id="suspect")
    author_suspend(author=author, actor=moderator, reason=EnforcementReason("bot-activity", "signup burst"))
    # The platform hears of it from the worker, signed.
    # The first post's decision, then the suspension and its statement of reasons (in either order).
    (event,) = _events(receiver, 3, "enforcement")
    assert event["data"]["target"] == {"type": "author", "external_id": "suspect"}
    assert event["data"]["action"] == "suspend" and event["data"]["reason_code"] == "bot-activity"

    later = _post(api, author="suspect")
    wait_until(lambda: all_scored([later["id"]]), timeout=SCORED_TIMEOUT, message=f"scored\n{worker.log_tail()}")
    held = Post.objects.get(pk=later["id"])
    assert held.status == PostStatus.QUEUED
    assert held.scores.get().features["enforcement"] == "author suspended: held for review"
    # The pre-publish inline check says the same at once.
    inline = _post(api, author="suspect", path="posts?wait_ms=1000")
    assert inline["status"] == PostStatus.QUEUED, inline


def test_a_block_of_an_unknown_suffix_domain_removes_its_subdomains_without_a_model_call(api, worker, triton_server):
    moderator = UserFactory(username="mod-block")
    assert block_domain_value("paypa1-secure.example") == "paypa1-secure.example"
    domain, _ = Domain.objects.get_or_create(name="paypa1-secure.example")
    list_entry_set(row=domain, status=ListStatus.BLOCK, actor=moderator, reason=EnforcementReason("phishing"))
    before = pipeline_inferences(triton_server)
    post = _post(api, author="phisher", url=f"https://login.paypa1-secure.example/verify?{time.monotonic_ns()}")
    wait_until(lambda: all_scored([post["id"]]), timeout=SCORED_TIMEOUT, message=f"scored\n{worker.log_tail()}")
    removed = Post.objects.select_related("link__domain").get(pk=post["id"])
    assert removed.link is not None and removed.link.domain.name == "paypa1-secure.example"
    assert removed.status == PostStatus.AUTO_REMOVED
    assert removed.scores.get().short_circuit_reason.startswith("blocked_domain: ")
    assert pipeline_inferences(triton_server) == before


def test_an_appeal_overturned_by_another_moderator_tells_the_platform_and_relabels(api, worker, receiver):
    set_policy(remove=0.0, approve=0.0)  # the models remove every post
    decider, reviewer = UserFactory(username="decider"), UserFactory(username="reviewer")
    post = _post(api, author="appellant")
    wait_until(lambda: all_scored([post["id"]]), timeout=SCORED_TIMEOUT, message=f"scored\n{worker.log_tail()}")
    row = Post.objects.get(pk=post["id"])
    assert row.status == PostStatus.AUTO_REMOVED
    # The automatic removal's statement is written by a task after the scoring commit, and only
    # while the post is still auto-removed: wait for it before a moderator decides.
    wait_until(
        lambda: StatementOfReasons.objects.filter(post=row, decision__isnull=True).exists(),
        timeout=SCORED_TIMEOUT,
        message=f"automatic statement\n{worker.log_tail()}",
    )
    decision_record(post=row, moderator=decider, label="spam", reason_code="scam")
    response = api.post("appeals", {"post_external_id": row.external_id, "statement": "my own shop"})
    assert response.status_code == 201, response.content
    appeal = Appeal.objects.get(pk=response.json()["id"])
    appeal_resolve(appeal=appeal, moderator=reviewer, outcome="overturn", reason_code="legitimate", note="checked")
    # auto-removal and its statement of reasons, the decider's removal and its statement, the
    # overturn's approval, then the appeal's outcome
    (event,) = _events(receiver, 6, "appeal.decided")
    assert event["data"]["appeal"] == {
        "id": appeal.pk,
        "outcome": "overturned",
        "resolved_at": event["data"]["appeal"]["resolved_at"],
    }
    assert event["data"]["post"]["status"] == PostStatus.APPROVED and event["data"]["note"] == "checked"
    (example,) = [e for e in effective_examples() if e.post_id == row.pk]
    assert example.label == "ham" and example.decided_by_username == "reviewer"
    assert Score.objects.filter(post=row).count() == 1
