"""Model storage retention (feedback.services.model_storage): what stays on disk and what goes,
on real folders in a scratch Triton repository and ARTIFACTS_DIR, with the registry rows that
name them."""

from __future__ import annotations

import io
import json
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from core.errors import Conflict
from feedback.models import DatasetVersion, ModelVersion, RunStatus, TrainingRun
from feedback.services.model_storage import prune_model_storage, storage_plan
from feedback.services.promotion import promote_run, rollback_to
from moderation.models import AuditLog

pytestmark = pytest.mark.django_db

DAY = 24 * 3600
PASSED_GATE = {"gate": {"has_production": True, "suites_compared": 1, "regressions": []}}


def _age(path: Path, seconds: float) -> None:
    """Backdate a folder and everything in it."""
    stamp = time.time() - seconds
    for item in [*path.rglob("*"), path]:
        os.utime(item, (stamp, stamp))


def _folder(path: Path, age_s: float = 2 * DAY) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "weights.bin").write_bytes(b"x" * 1024)
    _age(path, age_s)
    return path


@pytest.fixture
def layout(settings: Any, tmp_path: Path, artifacts_dir: Path, admin_user: Any) -> dict[str, Any]:
    """Eight text and tabular promotions (production: text 8, rolled back from 1; tabular 8),
    eight spam_pipeline bundles, four artifact versions (two with a teacher; current is an older
    one), six runs (the second still running, the first's candidate is the rollback target's)."""
    repo = tmp_path / "repo"
    settings.TRITON_MODEL_REPOSITORY = repo
    for model in ("tokenizer", "text_classifier", "fusion_model", "spam_pipeline"):
        (repo / model).mkdir(parents=True)
        (repo / model / "config.pbtxt").write_text("name: x\n")
        for n in range(1, 9):
            _folder(repo / model / str(n))
    dataset = DatasetVersion.objects.create(
        version=1, content_sha256="0" * 64, example_count=0, spam_count=0, ham_count=0, path="datasets/v1"
    )
    _folder(artifacts_dir / "datasets" / "v1")
    start = timezone.now() - timedelta(days=30)
    runs = []
    for i in range(1, 7):
        status = RunStatus.RUNNING if i == 2 else RunStatus.SUCCEEDED
        run = TrainingRun.objects.create(
            dataset=dataset, scope="text", status=status, report=PASSED_GATE, created_at=start + timedelta(days=i)
        )
        run.candidate_artifacts = {"text": f"runs/{run.pk}/text"}
        run.save(update_fields=["candidate_artifacts"])
        _folder(artifacts_dir / "runs" / str(run.pk) / "text")
        _age(artifacts_dir / "runs" / str(run.pk), 2 * DAY)
        runs.append(run)
    orphan = _folder(artifacts_dir / "runs" / "999" / "text")
    _age(orphan.parent, 2 * DAY)
    text_rows = {}
    for n in range(1, 9):
        text_rows[n] = ModelVersion.objects.create(
            name="text",
            version=n,
            triton_versions={"tokenizer": n, "text_classifier": n},
            artifact_path=f"runs/{runs[0].pk}/text" if n == 1 else "",
            created_at=start + timedelta(days=n),
        )
        ModelVersion.objects.create(
            name="tabular", version=n, triton_versions={"fusion_model": n}, created_at=start + timedelta(days=n)
        )
    ModelVersion.objects.filter(name="tabular", version=8).update(is_production=True)
    text_rows[8].is_production = True
    text_rows[8].rollback_target = text_rows[1]
    text_rows[8].save()
    text = artifacts_dir / "text"
    for name in ("20261101T000000Z", "20261102T000000Z", "20261103T000000Z", "20261104T000000Z"):
        _folder(text / name)
    for name in ("20261101T000000Z-teacher", "20261103T000000Z-teacher"):
        _folder(text / name)
    _folder(text / "notes")  # not named like a version
    (text / "current").symlink_to("20261102T000000Z")
    return {"repo": repo, "runs": runs, "orphan": orphan, "text": text, "admin": admin_user}


def _names(paths: list[Path], root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in paths}


def test_the_plan_keeps_what_serves_or_can_be_rolled_back_to(layout, artifacts_dir):
    plan = storage_plan(keep=2, min_age_s=DAY)

    runs = layout["runs"]
    repo = layout["repo"]
    assert _names([p for p in plan.doomed if p.is_relative_to(repo)], repo) == {
        # text pair: newest two (7, 8) and production's rollback target (1) stay
        *(f"{m}/{n}" for m in ("tokenizer", "text_classifier") for n in range(2, 7)),
        # fusion: newest two and production (8) stay
        *(f"fusion_model/{n}" for n in range(1, 7)),
        # spam_pipeline is rebuilt at every publish: its newest two stay
        *(f"spam_pipeline/{n}" for n in range(1, 7)),
    }
    assert _names([p for p in plan.doomed if p.is_relative_to(artifacts_dir)], artifacts_dir) == {
        # the oldest version and its teacher; current (an older one) and the newest two stay
        "text/20261101T000000Z",
        "text/20261101T000000Z-teacher",
        # runs: the newest two (5, 6), the running one (2) and the rollback target's (1) stay
        f"runs/{runs[2].pk}",
        f"runs/{runs[3].pk}",
        "runs/999",
    }
    assert sum(plan.bytes_by_path.values()) == 1024 * len(plan.doomed)  # one weights file each
    assert all(p.exists() for p in plan.doomed)  # a plan deletes nothing


def test_pruning_deletes_the_plan_and_audits_it(layout, artifacts_dir):
    plan = prune_model_storage(keep=2, min_age_s=DAY)

    assert plan.doomed and not any(p.exists() for p in plan.doomed)
    assert (layout["repo"] / "text_classifier" / "1").is_dir()  # the one-click rollback's files
    assert (layout["repo"] / "text_classifier" / "8").is_dir()
    assert (layout["repo"] / "spam_pipeline" / "config.pbtxt").is_file()
    assert (layout["text"] / "current" / "weights.bin").is_file()
    assert (layout["text"] / "20261103T000000Z-teacher").is_dir()
    assert (layout["text"] / "notes").is_dir()
    assert (artifacts_dir / "datasets" / "v1").is_dir()
    row = AuditLog.objects.get(action="model_storage.pruned")
    assert "runs/999" in " ".join(row.after["removed"])
    assert len(row.after["removed"]) == len(plan.doomed)
    assert storage_plan(keep=2, min_age_s=DAY).doomed == []  # nothing left to do
    assert AuditLog.objects.filter(action="model_storage.pruned").count() == 1


def test_nothing_recent_is_deleted(layout, artifacts_dir):
    """A run that has not recorded its candidate yet, or a version written today, stays."""
    _age(layout["orphan"].parent, 60)
    _age(layout["repo"] / "fusion_model" / "3", 60)

    doomed = storage_plan(keep=2, min_age_s=DAY).doomed

    assert layout["orphan"].parent not in doomed
    assert layout["repo"] / "fusion_model" / "3" not in doomed
    assert layout["repo"] / "fusion_model" / "2" in doomed


def test_a_pruned_candidate_is_refused_by_promotion_with_a_reason(layout, artifacts_dir):
    old = layout["runs"][2]
    prune_model_storage(keep=2, min_age_s=DAY)

    with pytest.raises(Conflict) as refused:
        promote_run(run=old, user=layout["admin"])
    assert refused.value.code == "candidate_removed"
    assert "MODEL_STORAGE_KEEP" in str(refused.value)


def test_a_rollback_to_a_pruned_version_is_refused_with_a_reason(layout):
    prune_model_storage(keep=2, min_age_s=DAY)
    pruned = ModelVersion.objects.get(name="text", version=3)

    with pytest.raises(Conflict) as refused:
        rollback_to(target=pruned, user=layout["admin"])
    assert refused.value.code == "version_removed"
    assert "tokenizer/3" in str(refused.value)


def test_the_command_dry_run_prints_and_keeps(layout, artifacts_dir):
    (layout["orphan"] / "model.onnx").write_bytes(b"x" * 3 * 2**20)
    _age(layout["orphan"].parent, 2 * DAY)
    out = io.StringIO()
    call_command("prune_models", "--keep", "2", "--min-age-s", str(DAY), "--dry-run", stdout=out)

    summary = json.loads(out.getvalue())
    assert summary["dry_run"] is True and "removed" not in summary
    assert "artifacts/runs/999" in summary["to_remove"]
    assert "triton/spam_pipeline/1" in summary["to_remove"]
    assert 3.0 <= summary["would_free_mib"] < 3.1  # the orphan's 3 MiB and 1 KiB folders
    assert layout["orphan"].is_dir()

    out = io.StringIO()
    call_command("prune_models", "--keep", "2", "--min-age-s", str(DAY), stdout=out)
    done = json.loads(out.getvalue())
    assert done["removed"] == summary["to_remove"] and done["failed"] == {}
    assert not layout["orphan"].exists()


def test_keep_below_one_is_refused(layout):
    with pytest.raises(ValueError):
        storage_plan(keep=0)


def test_current_as_a_file_naming_the_version_is_kept(layout):
    current = layout["text"] / "current"
    current.unlink()
    current.write_text("20261101T000000Z\n")  # where symbolic links are not kept

    doomed = storage_plan(keep=2, min_age_s=DAY).doomed

    assert layout["text"] / "20261101T000000Z" not in doomed
    assert layout["text"] / "20261101T000000Z-teacher" not in doomed
    assert layout["text"] / "20261102T000000Z" in doomed  # no longer current


def test_the_teacher_a_version_started_from_is_kept(layout, settings):
    """A student named by its metrics.json, whatever the teacher's folder is called; and the
    version FEEDBACK_TEXT_BASE names."""
    text = layout["text"]
    _folder(text / "20261030T000000Z")
    _folder(text / "20261031T000000Z")
    started_from = {"base_checkpoint": str(text / "20261030T000000Z")}
    (text / "20261104T000000Z" / "metrics.json").write_text(json.dumps(started_from))
    _age(text / "20261104T000000Z", 2 * DAY)
    settings.FEEDBACK_TEXT_BASE = str(text / "20261031T000000Z")

    doomed = storage_plan(keep=2, min_age_s=DAY).doomed

    assert text / "20261030T000000Z" not in doomed
    assert text / "20261031T000000Z" not in doomed
    assert text / "20261101T000000Z" in doomed


def test_keep_one_still_leaves_two_triton_folders_per_model(layout):
    doomed = storage_plan(keep=1, min_age_s=DAY).doomed

    assert layout["repo"] / "spam_pipeline" / "7" not in doomed
    assert layout["repo"] / "spam_pipeline" / "6" in doomed


def test_symbolic_links_are_never_followed_or_deleted(layout, artifacts_dir, tmp_path):
    outside = _folder(tmp_path / "elsewhere" / "keep-me")
    (artifacts_dir / "runs" / "1000").symlink_to(outside, target_is_directory=True)
    (layout["repo"] / "fusion_model" / "9").symlink_to(outside, target_is_directory=True)  # the newest number

    plan = prune_model_storage(keep=2, min_age_s=DAY)

    assert artifacts_dir / "runs" / "1000" not in plan.doomed
    assert layout["repo"] / "fusion_model" / "9" not in plan.doomed
    assert (outside / "weights.bin").is_file()
    assert (layout["repo"] / "fusion_model" / "7").is_dir()  # the link took no real folder's place


def test_a_folder_that_cannot_be_deleted_is_audited_as_failed(layout, artifacts_dir, monkeypatch):
    """rmtree raises as it does on a read-only mount (tests run as root, which permissions do not stop)."""
    import shutil

    orphan_run = layout["orphan"].parent
    real_rmtree = shutil.rmtree

    def rmtree(path: Path, *args: Any, **kwargs: Any) -> None:
        if Path(path) == orphan_run:
            raise PermissionError(13, "Permission denied", str(path))
        real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr("feedback.services.model_storage.shutil.rmtree", rmtree)

    plan = prune_model_storage(keep=2, min_age_s=DAY)

    assert orphan_run in plan.failed and orphan_run.is_dir()
    assert plan.removed and not any(p.exists() for p in plan.removed)
    row = AuditLog.objects.get(action="model_storage.pruned")
    assert row.after["failed"] == {"artifacts/runs/999": "PermissionError: Permission denied"}
    assert "artifacts/runs/999" not in row.after["removed"]
    assert storage_plan(keep=2, min_age_s=DAY).doomed == [orphan_run]  # the next run tries again


def test_a_teacher_recorded_under_another_path_is_kept_by_its_name(layout, tmp_path):
    """ARTIFACTS_DIR moved since training: the recorded path no longer lies under it."""
    text = layout["text"]
    _folder(text / "20261030T000000Z")
    started_from = {"base_checkpoint": str(tmp_path / "old-mount" / "text" / "20261030T000000Z")}
    (text / "20261104T000000Z" / "metrics.json").write_text(json.dumps(started_from))
    _age(text / "20261104T000000Z", 2 * DAY)

    assert text / "20261030T000000Z" not in storage_plan(keep=2, min_age_s=DAY).doomed


def test_a_folder_half_gone_is_failed_not_removed(layout, monkeypatch):
    """rmtree raises FileNotFoundError for a child that vanished: the folder itself still exists."""
    import shutil

    orphan_run = layout["orphan"].parent
    real_rmtree = shutil.rmtree

    def rmtree(path: Path, *args: Any, **kwargs: Any) -> None:
        if Path(path) == orphan_run:
            raise FileNotFoundError(2, "No such file or directory", str(path / "text"))
        real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr("feedback.services.model_storage.shutil.rmtree", rmtree)

    plan = prune_model_storage(keep=2, min_age_s=DAY)

    assert orphan_run in plan.failed and orphan_run not in plan.removed


def test_the_command_exits_non_zero_when_a_folder_stays(layout, monkeypatch):
    import shutil

    real_rmtree = shutil.rmtree

    def rmtree(path: Path, *args: Any, **kwargs: Any) -> None:
        if Path(path) == layout["orphan"].parent:
            raise PermissionError(13, "Permission denied", str(path))
        real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr("feedback.services.model_storage.shutil.rmtree", rmtree)
    out = io.StringIO()

    with pytest.raises(CommandError, match="could not be deleted"):
        call_command("prune_models", "--keep", "2", "--min-age-s", str(DAY), stdout=out)
    assert json.loads(out.getvalue())["failed"] == {"artifacts/runs/999": "PermissionError: Permission denied"}
