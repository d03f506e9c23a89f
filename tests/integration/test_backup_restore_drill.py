"""The backup and restore drill (scripts/backup_restore_drill.py) run for real on a small loaded
database: pg_dump of the test database, tar of a model repository and artifacts, restore into a
new database on the same server, and the product checked on the copy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.db import connection

from feedback.services.promotion import registry_sync
from moderation.models import Post, PostStatus
from tests.factories import AuthorFactory, DecisionFactory, PostFactory, ReportFactory, ScoreFactory, SourceFactory
from tests.integration.conftest import _db_url

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
TREES = ("link_model", "behaviour_model", "fusion_model")


def database_exists(name: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        return cursor.fetchone() is not None


@pytest.fixture
def loaded(transactional_db, settings, tmp_path: Path) -> dict[str, Path]:
    """Two sources with posts, scores, reports and decisions; a model repository with two
    published tabular versions registered; an artifacts folder."""
    models, artifacts = tmp_path / "models", tmp_path / "artifacts"
    for model in TREES:
        for version in (1, 2):
            folder = models / model / str(version)
            folder.mkdir(parents=True)
            (folder / "model.json").write_text(json.dumps({"model": model, "version": version}))
    (artifacts / "datasets" / "v1").mkdir(parents=True)
    (artifacts / "datasets" / "v1" / "examples.jsonl").write_text('{"text": "win", "label": "spam"}\n')
    settings.TRITON_MODEL_REPOSITORY = models
    settings.ARTIFACTS_DIR = artifacts
    registry_sync()
    for n, source in enumerate((SourceFactory(), SourceFactory())):
        for i in range(6):
            post = PostFactory(
                author=AuthorFactory(source=source), status=PostStatus.QUEUED, final_score=0.1 * i + 0.013 * n
            )
            ScoreFactory(post=post, final_score=post.final_score)
            ReportFactory(post=post)
            if i % 2:
                DecisionFactory(post=post)
    return {"models": models, "artifacts": artifacts}


def drill(workdir: Path, restore_db: str, loaded: dict[str, Path], *extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": _db_url(),  # the test database with the rows above
        "TRITON_MODEL_REPOSITORY": str(loaded["models"]),
        "ARTIFACTS_DIR": str(loaded["artifacts"]),
    }
    script = str(ROOT / "scripts" / "backup_restore_drill.py")
    return subprocess.run(
        [sys.executable, script, "--workdir", str(workdir), "--restore-db", restore_db, *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_backup_restores_into_a_new_database_that_serves_the_same_data(loaded, tmp_path):
    restore_db = f"{connection.settings_dict['NAME']}_drill_{uuid.uuid4().hex[:8]}"
    try:
        done = drill(tmp_path / "backup", restore_db, loaded, "--keep")
        assert done.returncode == 0, done.stdout + done.stderr
        report = json.loads(done.stdout)
        assert report["ok"] is True
        assert report["rows"]["moderation_post"] == Post.objects.count() == 12
        assert report["rows"]["scoring_score"] == 12 and report["rows"]["feedback_modelversion"] == 2
        assert report["model_files"] == 6 and report["artifact_files"] == 1
        checks = report["checks"]
        assert checks["tables"] and checks["model_repository"] and checks["artifacts"]
        assert checks["django_check"] and checks["migrations_applied"]
        assert checks["serves"]["posts"] == [True] * 5
        assert checks["serves"]["models"] == {"tabular": True}
        manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())
        assert {p["final_score"] for p in manifest["posts"]} <= set(Post.objects.values_list("final_score", flat=True))
        assert database_exists(restore_db)  # --keep

        # A restore never overwrites: the name of an existing database is refused.
        again = drill(tmp_path / "again", restore_db, loaded)
        assert again.returncode != 0 and "restores into a new database only" in again.stderr
        assert database_exists(restore_db)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{restore_db}"')


def test_the_drill_drops_its_own_database_afterwards(loaded, tmp_path):
    restore_db = f"{connection.settings_dict['NAME']}_drill_{uuid.uuid4().hex[:8]}"
    done = drill(tmp_path / "backup", restore_db, loaded)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["ok"] is True
    assert not database_exists(restore_db)
