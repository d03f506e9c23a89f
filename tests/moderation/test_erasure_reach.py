"""An erasure reaches everything that holds the author: one token in every field the author
gave (ids, profile, texts, link and domain, preview, report, decision, appeal and enforcement
notes), the posts scored, decided, appealed and announced by webhook, trained into a published
lexical model and queued in Redis. After the erasure no table, no file under the artifacts
directory and model repository, and none of the test's Redis keys holds the token or the
author's address; the dataset's erasure record lists the model trained on it for retraining."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone

from feedback.models import DatasetErasure, ModelVersion
from feedback.services.datasets import dataset_load, dataset_snapshot
from modelops.text.baseline import LEXICAL_FILE, save_lexical, train_baseline
from modelops.text.data import load_sms_splits
from moderation.models import Author, Domain, Post, Report
from moderation.services.appeals import appeal_resolve, appeal_submit
from moderation.services.decisions import decision_record
from moderation.services.enforcement import EnforcementReason, author_suspend
from moderation.services.erasure import author_erase
from moderation.services.ingest import post_ingest
from scoring import workqueue
from scoring.services.scoring import score_posts
from tests.dashboard.dashboard_factories import UserFactory
from tests.dashboard.dashboard_fixtures import client_for
from tests.scoring.pipeline_support import FakeClient, make_source

pytestmark = pytest.mark.django_db

TOKEN = "zqvictim4711"  # lower case: URLs and domains are stored lower-cased
ADDRESS = "203.0.113.171"


@pytest.fixture
def dirs(settings: Any, tmp_path: Path) -> tuple[Path, Path]:
    settings.ARTIFACTS_DIR = tmp_path / "artifacts"
    return settings.ARTIFACTS_DIR, tmp_path / "model_repository"


def _holders_in_tables() -> list[str]:
    found = []
    for config in apps.get_app_configs():
        for model in config.get_models():
            rows = json.dumps(list(model._default_manager.values()), default=str)
            if TOKEN in rows or ADDRESS in rows:
                found.append(model.__name__)
    return found


def _holders_in_files(*roots: Path) -> list[str]:
    return [
        str(path)
        for root in roots
        for path in root.rglob("*")
        if path.is_file() and (TOKEN.encode() in (data := path.read_bytes()) or ADDRESS.encode() in data)
    ]


def _victim_posts(source: Any) -> list[Post]:
    posts = []
    for n in range(2):
        post, _ = post_ingest(
            source=source,
            payload={
                "external_id": f"post-{n}",
                "text": f"call {TOKEN} now, prize {n}",
                "url": f"https://{TOKEN}-site.example/{TOKEN}/{n}",
                "preview": {"title": f"{TOKEN} title", "description": f"{TOKEN} page", "text": f"{TOKEN} text"},
                "journey": [{"step": f"open_{TOKEN}", "at": timezone.now().isoformat()}],
                "created_at": timezone.now(),
                "ip": ADDRESS,
                "author": {
                    "external_id": f"{TOKEN}-ext",
                    "username": f"{TOKEN} name",
                    "email_domain": f"{TOKEN}-mail.example",
                },
            },
        )
        posts.append(post)
    return posts


def test_an_erasure_leaves_the_author_in_no_table_file_or_key(dirs, django_capture_on_commit_callbacks):
    artifacts, repository = dirs
    source = make_source(callback_url="https://hooks.example/events", webhook_secret="s3cret")
    moderator, reviewer, admin = UserFactory(), UserFactory(), UserFactory(role="admin")
    posts = _victim_posts(source)
    score_posts(post_ids=[p.pk for p in posts], client=FakeClient())  # Score rows with features
    Report.objects.create(post=posts[0], reporter_id="someone", reason="spam", details=f"{TOKEN} report")
    decision_record(post=posts[0], moderator=moderator, label="spam", reason_code="scam", note=f"{TOKEN} note")
    appeal, _ = appeal_submit(source=source, post_external_id="post-0", statement=f"{TOKEN} statement")
    appeal_resolve(appeal=appeal, moderator=reviewer, outcome="uphold", note=f"{TOKEN} resolution")
    author = Author.objects.get(source=source)
    author_suspend(author=author, actor=moderator, reason=EnforcementReason("scam", f"{TOKEN} suspension"))
    bystander, _ = post_ingest(
        source=source,
        payload={
            "external_id": "other",
            "text": "see you at lunch",
            "created_at": timezone.now(),
            "author": {"external_id": "b"},
        },
    )
    decision_record(post=bystander, moderator=moderator, label="ham", reason_code="legitimate")
    # A published lexical model trained on a dataset holding the author's post, kept in the
    # artifacts and copied into the model repository as a publication does.
    dataset = dataset_snapshot(created_by=admin, name="with the author")
    rows = dataset_load(dataset=dataset)
    assert any(TOKEN in row["text"] for row in rows)
    sms = load_sms_splits()
    texts = [row["text"] for row in rows] + list(sms.train.texts[:300])
    labels = [int(row["label"] == "spam") for row in rows] + list(sms.train.labels[:300])
    model_dir = artifacts / "text" / "v7"
    model_dir.mkdir(parents=True)
    save_lexical(train_baseline(texts, labels, texts, labels), model_dir)
    published = repository / "spam_pipeline" / "7" / "tokenizer"
    published.mkdir(parents=True)
    shutil.copy(model_dir / LEXICAL_FILE, published / LEXICAL_FILE)
    version = ModelVersion.objects.create(
        name="text", version=7, dataset=dataset, artifact_path=str(model_dir), is_production=True
    )
    # The scoring queue's keys about the posts.
    keys = [
        workqueue.claim_key(posts[0].pk),
        workqueue.done_key(posts[1].pk),
        f"{workqueue.POISON_PREFIX}{posts[1].pk}",
    ]
    for key in keys:
        cache.set(key, 1, timeout=300)
    assert _holders_in_tables() and _holders_in_files(artifacts)  # the fixture does hold the author

    with django_capture_on_commit_callbacks(execute=True):  # files rewritten, keys deleted after commit
        author_erase(author=author, actor=admin, via="dashboard")

    assert _holders_in_tables() == []
    assert _holders_in_files(artifacts, repository) == []
    assert cache.get_many(keys) == {}
    assert not Domain.objects.filter(name__contains=TOKEN).exists()
    (erasure,) = DatasetErasure.objects.filter(dataset=dataset)
    assert erasure.models_to_retrain == [{"id": version.pk, "name": "text", "version": 7, "is_production": True}]
    page = client_for(admin).get(reverse("feedback:dataset_detail", args=[dataset.version]))
    assert page.status_code == 200
    assert "Retrain</strong>, trained on the erased rows: text v7 (production)" in page.content.decode()
