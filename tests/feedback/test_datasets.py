from __future__ import annotations

import csv
import hashlib
import json

import pyarrow.parquet as pq
import pytest
from django.db import IntegrityError, transaction

from core.errors import ApplicationError
from feedback.models import DatasetVersion, ImmutableRowError, LabelledExample
from feedback.services.datasets import (
    dataset_file,
    dataset_import,
    dataset_load,
    dataset_snapshot,
    dataset_verify,
    split_for,
)
from tests.feedback.conftest import decide, make_post

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled(source, moderator):
    """60 authors with 2-3 posts each, alternately spam and ham."""
    for a in range(60):
        spammy = a % 2 == 0
        for i in range(2 + a % 2):
            post = make_post(source, author=f"user-{a}", text=f"post {i} of user {a}", spammy=spammy)
            decide(post, moderator, "spam" if spammy else "ham")


def test_snapshot_manifest_files_and_hash(labelled, admin_user, artifacts_dir):
    ds = dataset_snapshot(created_by=admin_user, name="first")
    assert ds.version == 1
    assert ds.example_count == LabelledExample.objects.count() == 150
    assert ds.spam_count == 60 and ds.ham_count == 90
    m = ds.manifest
    assert m["counts"] == {"total": 150, "spam": 60, "ham": 90}
    assert m["class_balance"]["spam"] == 0.4
    assert m["sources"] == {"chirp": 150}
    assert m["split_rule"]["name"] == "author-hash-v1"
    assert m["time_range"]["first_decided_at"] <= m["time_range"]["last_decided_at"]
    root = artifacts_dir / "datasets" / "1"
    data = (root / "data.jsonl").read_bytes()
    assert hashlib.sha256(data).hexdigest() == ds.content_sha256 == m["content_sha256"]
    assert json.loads((root / "manifest.json").read_text())["content_sha256"] == ds.content_sha256
    for name, info in m["files"].items():
        assert hashlib.sha256((root / name).read_bytes()).hexdigest() == info["sha256"]
    table = pq.read_table(root / "data.parquet")
    assert table.num_rows == 150
    with (root / "data.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 150 and json.loads(rows[0]["features"])["link"]["url_present"] == 1.0


def test_split_is_author_disjoint_and_deterministic(labelled, admin_user):
    ds = dataset_snapshot(created_by=admin_user)
    rows = dataset_load(dataset=ds)
    sides: dict[str, set[str]] = {}
    for r in rows:
        sides.setdefault(r["author_external_id"], set()).add(r["split"])
    assert all(len(s) == 1 for s in sides.values())
    assert {r["split"] for r in rows} == {"train", "validation", "test"}
    assert ds.members.filter(split="test").count() == sum(r["split"] == "test" for r in rows)
    # Same rule, same answer: a second snapshot of the same examples has the same content hash.
    again = dataset_snapshot(created_by=admin_user)
    assert again.version == 2 and again.content_sha256 == ds.content_sha256
    assert split_for(source="chirp", author_external_id="user-1", text="x") == split_for(
        source="chirp", author_external_id="user-1", text="different"
    )


def test_dataset_is_immutable(labelled, admin_user, source, moderator):
    ds = dataset_snapshot(created_by=admin_user)
    ds.name = "renamed"
    with pytest.raises(ImmutableRowError):
        ds.save()
    with pytest.raises(IntegrityError), transaction.atomic():
        DatasetVersion.objects.filter(pk=ds.pk).update(name="renamed")
    # New decisions do not change an existing version; they land in the next one.
    decide(make_post(source, author="newcomer"), moderator, "spam")
    assert dataset_load(dataset=ds) and len(dataset_load(dataset=ds)) == 150
    assert dataset_snapshot(created_by=admin_user).example_count == 151


def test_tampered_file_is_detected(labelled, admin_user):
    ds = dataset_snapshot(created_by=admin_user)
    path = dataset_file(dataset=ds, fmt="jsonl")
    path.write_bytes(path.read_bytes().replace(b'"label":"spam"', b'"label":"ham"', 1))
    with pytest.raises(ApplicationError) as exc:
        dataset_verify(dataset=ds)
    assert exc.value.code == "dataset_tampered"


def test_empty_snapshot_is_refused(db, admin_user):
    with pytest.raises(ApplicationError) as exc:
        dataset_snapshot(created_by=admin_user)
    assert exc.value.code == "empty_dataset"


def test_export_import_round_trip(labelled, admin_user):
    ds = dataset_snapshot(created_by=admin_user)
    exported = dataset_file(dataset=ds, fmt="jsonl").read_bytes()
    imported = dataset_import(content=exported, fmt="jsonl", created_by=admin_user, name="seed")
    original = dataset_load(dataset=ds)
    copy = dataset_load(dataset=imported)

    def frozen(r):
        dicts = json.dumps([r["features"], r["sub_scores"], r["model_versions"]], sort_keys=True)
        return (r["source"], r["post_external_id"], r["text"], r["label"], r["split"], r["final_score"], dicts)

    assert sorted(map(frozen, original)) == sorted(map(frozen, copy))
    assert imported.origin == "import" and imported.example_count == 150
    # CSV export imports too.
    csv_copy = dataset_import(
        content=dataset_file(dataset=ds, fmt="csv").read_bytes(), fmt="csv", created_by=admin_user
    )
    assert csv_copy.spam_count == ds.spam_count and csv_copy.ham_count == ds.ham_count


def test_import_minimal_csv(db, admin_user):
    content = b"text,label\nWin a free iPhone now,spam\nSee you at lunch,ham\nCall me,0\n"
    ds = dataset_import(content=content, fmt="csv", created_by=admin_user, source_slug="seed")
    rows = dataset_load(dataset=ds)
    assert [r["label"] for r in rows] == ["spam", "ham", "ham"]
    assert {r["source"] for r in rows} == {"seed"}


@pytest.mark.parametrize(
    ("content", "fmt", "expected"),
    [
        (b"text,label\nhello,maybe\n", "csv", "label must be spam or ham"),
        (b"text,label\n,spam\n", "csv", "text is missing"),
        (b"words,label\nhello,spam\n", "csv", "missing text/label"),
        (b'{"text": "a", "label": "spam"}\nnot json\n', "jsonl", "line 2"),
        (b"\xff\xfe bad bytes", "csv", "UTF-8"),
        (b"", "jsonl", "empty"),
        (b'{"text": "a", "label": "spam", "sub_scores": {"text": "high"}}\n', "jsonl", "sub_scores values"),
        (b'{"text": "a", "label": "spam", "features": [1, 2]}\n', "jsonl", "features is not a JSON object"),
    ],
)
def test_import_validation_rejects_whole_file(db, admin_user, content, fmt, expected):
    with pytest.raises(ApplicationError) as exc:
        dataset_import(content=content, fmt=fmt, created_by=admin_user)
    assert expected in (exc.value.message + " ".join(exc.value.fields.get("file", [])))
    assert LabelledExample.objects.count() == 0 and DatasetVersion.objects.count() == 0


def test_import_size_limits(db, admin_user, monkeypatch):
    monkeypatch.setattr("feedback.services.datasets.IMPORT_MAX_BYTES", 100)
    with pytest.raises(ApplicationError) as exc:
        dataset_import(content=b"text,label\n" + b"x,spam\n" * 50, fmt="csv", created_by=admin_user)
    assert exc.value.code == "import_too_large"
    monkeypatch.setattr("feedback.services.import_rows.IMPORT_MAX_TEXT_CHARS", 5)
    with pytest.raises(ApplicationError, match="invalid"):
        dataset_import(content=b"text,label\nlong text here,spam\n", fmt="csv", created_by=admin_user)


def test_scheduled_snapshot_skips_unchanged(labelled, source, moderator):
    from feedback.tasks import snapshot_dataset_task

    first = snapshot_dataset_task()
    assert first == 1
    assert snapshot_dataset_task() is None  # nothing new
    decide(make_post(source, author="late"), moderator, "ham")
    assert snapshot_dataset_task() == 2
