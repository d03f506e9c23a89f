"""Statements of reasons over the API (GET per statement, per decision; another source's is a
404) and the JSON lines export."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from moderation.services.decisions import decision_record
from moderation.services.enforcement import EnforcementReason
from moderation.services.sanctions import post_hide
from tests.dashboard.dashboard_factories import UserFactory
from tests.scoring.pipeline_support import make_author, make_post

pytest_plugins = ["tests.moderation.api_fixtures"]
pytestmark = pytest.mark.django_db


@pytest.fixture
def mod(db):
    return UserFactory(username="sor-mod", role="moderator")


def test_get_the_statement_of_a_decision_and_by_id(api, other_api, mod):
    post = make_post(author=make_author(api.source), external_id="p-77")
    decision = decision_record(post=post, moderator=mod, label="spam", reason_code="phishing")
    response = api.get(f"/api/v1/decisions/{decision.pk}/statement")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["action"] == "removal" and body["category"] == "scam" and body["decision_id"] == decision.pk
    assert body["post_external_id"] == "p-77"
    assert body["dsa"]["category"] == "STATEMENT_CATEGORY_SCAMS_AND_FRAUD"
    assert body["dsa"]["decision_visibility"] == ["DECISION_VISIBILITY_CONTENT_REMOVED"]
    assert api.get(f"/api/v1/statements/{body['id']}").json() == body
    # another source sees neither
    assert other_api.get(f"/api/v1/decisions/{decision.pk}/statement").status_code == 404
    assert other_api.get(f"/api/v1/statements/{body['id']}").status_code == 404


def test_an_approval_has_no_statement(api, mod):
    post = make_post(author=make_author(api.source))
    decision = decision_record(post=post, moderator=mod, label="ham")
    response = api.get(f"/api/v1/decisions/{decision.pk}/statement")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "statement_not_found"


def test_export_writes_one_submission_per_line_for_the_chosen_source(api, other_api, mod, tmp_path):
    mine = make_post(author=make_author(api.source))
    theirs = make_post(author=make_author(other_api.source))
    decision_record(post=mine, moderator=mod, label="spam", reason_code="commercial-spam")
    post_hide(post=theirs, actor=mod, reason=EnforcementReason("abuse"))
    out = tmp_path / "sor.jsonl"
    call_command("export_statements", "--source", api.source.slug, "-o", str(out), stderr=StringIO())
    lines = out.read_text().splitlines()
    assert len(lines) == 1
    statement = json.loads(lines[0])
    assert statement["puid"] == f"{api.source.slug}:post:{mine.external_id}"
    assert statement["decision_ground"] == "DECISION_GROUND_INCOMPATIBLE_CONTENT"
    everything = StringIO()
    call_command("export_statements", stdout=everything, stderr=StringIO())
    assert [json.loads(x)["decision_visibility"][0] for x in everything.getvalue().splitlines()] == [
        "DECISION_VISIBILITY_CONTENT_REMOVED",
        "DECISION_VISIBILITY_CONTENT_DISABLED",
    ]
