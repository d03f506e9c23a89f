"""Erasure on request: after it, nothing of the author is readable through the API, the
dashboard, the exports (audit CSV, dataset files), the training data or the evaluation suites,
and the database holds none of it either; frozen dataset versions and suites record the
exclusion and still verify."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from feedback.models import DatasetErasure, LabelledExample, SuiteErasure
from feedback.services.datasets import dataset_dir, dataset_load, dataset_snapshot, dataset_verify
from feedback.services.suites import suite_file, suite_mark_dataset, suite_rows
from moderation.models import ApiScope, AuditLog, Author, Note, Post, PostStatus, Report
from moderation.services.appeals import appeal_submit
from moderation.services.decisions import decision_record
from moderation.services.enforcement import EnforcementReason, author_suspend
from moderation.services.ingest import post_ingest
from moderation.services.notes import note_create, note_delete, note_update
from tests.dashboard.dashboard_factories import UserFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403
from tests.dashboard.dashboard_fixtures import client_for
from tests.factories import create_api_key
from tests.scoring.pipeline_support import make_source

pytestmark = pytest.mark.django_db

SECRETS = (
    "victim-ext-77",
    "Vyctoria Uniquename",
    "victim-mail.example",
    "VICTIMTEXT",
    "VICTIMPATH",
    "VICTIMPREVIEW",
    "VICTIMREPORT",
    "VICTIMNOTE",
    "VICTIMSTATEMENT",
    "VICTIMSUSPEND",
    "VICTIMPOSTNOTE",
    "VICTIMAUTHORNOTE",
    "VICTIMEDITEDNOTE",
    "VICTIMGONENOTE",
    "203.0.113.99",
)


@pytest.fixture(autouse=True)
def artifacts(settings: Any, tmp_path: Path) -> Path:
    settings.ARTIFACTS_DIR = tmp_path / "artifacts"
    return settings.ARTIFACTS_DIR


def _leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def _victim(source, moderator) -> list[Post]:
    posts = []
    for n in range(2):
        post, _ = post_ingest(
            source=source,
            payload={
                "external_id": f"victim-post-{n}",
                "text": f"VICTIMTEXT number {n}",
                "url": f"https://victim-site.example/VICTIMPATH/{n}",
                "preview": {"text": "VICTIMPREVIEW page"},
                "created_at": timezone.now(),
                "ip": "203.0.113.99",
                "author": {
                    "external_id": "victim-ext-77",
                    "username": "Vyctoria Uniquename",
                    "email_domain": "victim-mail.example",
                },
            },
        )
        posts.append(post)
    Report.objects.create(post=posts[0], reporter_id="someone", reason="spam", details="VICTIMREPORT says")
    decision_record(post=posts[0], moderator=moderator, label="spam", reason_code="scam", note="VICTIMNOTE")
    appeal_submit(source=source, post_external_id=posts[0].external_id, statement="VICTIMSTATEMENT please")
    author_suspend(author=posts[0].author, actor=moderator, reason=EnforcementReason("scam", "VICTIMSUSPEND"))
    # Moderators' notes: on a post, on the author, one edited and one deleted (their texts stay
    # in the audit trail until the erasure).
    note_create(text="VICTIMPOSTNOTE seen before", writer=moderator, post=posts[1])
    edited = note_create(text="VICTIMAUTHORNOTE first", writer=moderator, author=posts[0].author)
    note_update(note=edited, text="VICTIMEDITEDNOTE second", actor=moderator)
    note_delete(note=note_create(text="VICTIMGONENOTE", writer=moderator, author=posts[0].author), actor=moderator)
    return posts


def test_nothing_of_an_erased_author_stays_readable(moderator, django_capture_on_commit_callbacks):
    source = make_source()
    admin = UserFactory(username="boss", role="admin")
    posts = _victim(source, moderator)
    lone = dataset_snapshot(created_by=admin, name="the victim alone")
    bystander_post, _ = post_ingest(
        source=source,
        payload={
            "external_id": "other-1",
            "text": "unrelated words",
            "created_at": timezone.now(),
            "author": {"external_id": "someone-else"},
        },
    )
    decision_record(post=bystander_post, moderator=moderator, label="ham", reason_code="legitimate")
    frozen = dataset_snapshot(created_by=admin, name="before erasure")
    assert _leaks((dataset_dir(frozen) / "data.csv").read_text())  # the fixture does hold the data
    marked = suite_mark_dataset(dataset=frozen, user=admin, name="held out")
    only_theirs = suite_mark_dataset(dataset=lone, user=admin, name="only theirs")
    for suite in (marked, only_theirs):
        assert _leaks(suite_file(suite).read_text())  # the suites do hold the data
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Api-Key {create_api_key(source)}")
    author = Author.objects.get(external_id="victim-ext-77")
    notes_before = api.get("/api/v1/notes", {"author_external_id": "victim-ext-77"})
    assert "VICTIMPOSTNOTE" in notes_before.content.decode()  # the fixture's notes are readable
    assert Note.objects.filter(author=author).count() == 2

    with django_capture_on_commit_callbacks(execute=True):  # the dataset files are rewritten after commit
        response = api.post("/api/v1/erasures", {"author_external_id": "victim-ext-77"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["erased_post_count"] == 2
    again = api.post("/api/v1/erasures", {"author_external_id": "victim-ext-77"}, format="json")
    assert again.status_code == 404

    # The API: the posts are tombstones, their status and decision kept.
    for post in posts:
        body = api.get(f"/api/v1/posts/{post.external_id}")
        assert body.status_code == 200 and _leaks(body.content.decode()) == []
    assert Post.objects.get(pk=posts[0].pk).status == PostStatus.REMOVED
    assert not Note.objects.filter(author=author).exists()
    # The note entries of the audit trail stay, without the texts.
    assert AuditLog.objects.filter(target_type="note").count() == 5
    # The dashboard: post, author, queue, appeals, audit pages and the audit CSV.
    pages = [
        reverse("dashboard:post_detail", args=[posts[0].pk]),
        reverse("dashboard:post_detail", args=[posts[1].pk]),
        reverse("dashboard:author", args=[author.pk]),
        reverse("dashboard:queue"),
        reverse("dashboard:appeals"),
        reverse("dashboard:appeal", args=[posts[0].appeals.get().pk]),
        reverse("dashboard:audit"),
    ]
    client = client_for(admin)
    for url in pages:
        page = client.get(url)
        assert page.status_code == 200 and _leaks(page.content.decode()) == [], url
    csv_text = client.get(reverse("dashboard:audit_csv")).getvalue().decode()
    assert _leaks(csv_text) == []
    assert AuditLog.objects.filter(action="author.erase", target_id=str(author.pk)).get().after["via"] == "api:" + (
        source.slug
    )
    # Training data: the examples are gone, the frozen version's files were rewritten and it
    # records the exclusion (and still verifies); a later snapshot leaves the author out.
    assert not LabelledExample.objects.filter(post_id__in=[p.pk for p in posts]).exists()
    (erasure,) = DatasetErasure.objects.filter(dataset=frozen)
    assert erasure.examples_removed == 1
    dataset_verify(dataset=frozen)
    assert [row["post_external_id"] for row in dataset_load(dataset=frozen)] == ["other-1"]
    for name in ("data.jsonl", "data.csv", "manifest.json"):
        assert _leaks((dataset_dir(frozen) / name).read_text()) == [], name
    assert _leaks((dataset_dir(frozen) / "data.parquet").read_bytes().decode("latin-1")) == []
    assert json.loads((dataset_dir(frozen) / "manifest.json").read_text())["erasures"] == [{"rows_now": 1}]
    # Evaluation suites: rewritten without the author's rows, the new hash recorded, still
    # loading; the suite row keeps its counts at freezing, the erasure holds the current ones.
    assert _leaks(suite_file(marked).read_text()) == []
    assert [row["text"] for row in suite_rows(marked)] == ["unrelated words"]
    (suite_erasure,) = SuiteErasure.objects.filter(suite=marked)
    assert (suite_erasure.rows_removed, suite_erasure.row_count, suite_erasure.spam_count) == (1, 1, 0)
    assert marked.row_count == 2
    # A suite left with no rows stays, empty (evaluation skips it).
    assert suite_rows(only_theirs) == [] and suite_file(only_theirs).read_text() == ""
    assert SuiteErasure.objects.get(suite=only_theirs).row_count == 0
    later = dataset_snapshot(created_by=admin, name="after erasure")
    assert later.example_count == 1 and _leaks((dataset_dir(later) / "data.csv").read_text()) == []
    # And the database holds none of it, in any table of the three apps.
    for app in ("moderation", "scoring", "feedback"):
        for model in apps.get_app_config(app).get_models():
            rows = json.dumps(list(model._default_manager.values()), default=str)
            assert _leaks(rows) == [], model.__name__


def test_erasure_from_the_dashboard_is_for_admins_and_needs_a_confirmation(moderator):
    source = make_source()
    posts = _victim(source, moderator)
    author = posts[0].author
    url = reverse("dashboard:author_erase", args=[author.pk])
    assert client_for(moderator).post(url, {"confirm": "on"}).status_code == 403
    admin = client_for(UserFactory(username="boss", role="admin"))
    assert admin.post(url, {}).status_code == 400
    author.refresh_from_db()
    assert author.erased_at is None
    assert admin.post(url, {"confirm": "on"}).status_code == 302
    author.refresh_from_db()
    assert author.erased_at is not None and author.username == "" and author.external_id == f"erased-{author.pk}"
    assert Post.objects.get(pk=posts[1].pk).text == ""
    entry = AuditLog.objects.get(action="author.erase")
    assert entry.actor.username == "boss" and entry.after["via"] == "dashboard"


def test_the_erasure_scope_is_required():
    source = make_source()
    api = APIClient()
    scopes = [s for s in ApiScope.values if s != ApiScope.AUTHORS_ERASE]
    api.credentials(HTTP_AUTHORIZATION=f"Api-Key {create_api_key(source, scopes=scopes)}")
    response = api.post("/api/v1/erasures", {"author_external_id": "whoever"}, format="json")
    assert response.status_code == 403 and response.json()["error"]["code"] == "insufficient_scope"
