"""How many trained models stay on disk: the candidates training runs write under
ARTIFACTS_DIR, the versions `manage.py train_text_model` and `train_feature_models` write there,
and the version folders every promotion writes into the Triton model repository.

Why: an adaptation round runs on its own as labels arrive, and each writes a candidate (about
220 MB for the three-layer text model with its ONNX files) and, when promoted, new Triton
folders (the text pair, its bundle in spam_pipeline). Nothing else bounds the disk.

What stays, whatever its age (docs/deploy.md, "Model storage"):
- whatever production serves or could be rolled back to in one click: for each bundle the
  production ModelVersion, its rollback target and the newest MODEL_STORAGE_KEEP versions, with
  the Triton folders and the run candidate each names;
- the newest MODEL_STORAGE_KEEP Triton folders of every model, and never fewer than two (Triton
  serves the newest; the one before is what a bundle written a moment ago may still name);
- `text/current` and `tabular/current` and the newest MODEL_STORAGE_KEEP versions beside them,
  each with its teacher: `<version>-teacher`, or the version its metrics.json names as the
  checkpoint it started from; and the version FEEDBACK_TEXT_BASE names, if it is one;
- the candidates of the newest MODEL_STORAGE_KEEP runs and of every run not finished;
- anything written in the last MODEL_STORAGE_MIN_AGE_S, so a run that has not recorded its
  candidate yet keeps it.
Datasets, the base checkpoint, symbolic links and anything not named like a version are never
touched. A succeeded run's candidate that nobody promoted goes once MODEL_STORAGE_KEEP newer runs
exist and it is older than MODEL_STORAGE_MIN_AGE_S; promoting it then answers `candidate_removed`.

Hand-written: the rules are this project's registry (ModelVersion, TrainingRun) and its two
folder layouts; no storage library knows them.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from contracts.triton import ALL_MODELS
from contracts.triton import versions as repository_versions
from feedback.models import ModelBundle, ModelVersion, RunStatus, TrainingRun
from feedback.services.datasets import artifacts_dir
from feedback.services.promotion import repository
from modelops.current import current_dir
from moderation.services.audit import audit_record

log = logging.getLogger(__name__)

ARTIFACT_KINDS = ("text", "tabular")
# modelops.text.train and modelops.tabular.artifacts name versions by their UTC start time.
VERSION_NAME = re.compile(r"^\d{8}T\d{6}Z(-teacher)?$")
TEACHER_SUFFIX = "-teacher"
# modelops.text.train records the checkpoint a version started from (a teacher, for a student).
METRICS_FILE = "metrics.json"
# Triton folders kept per model whatever MODEL_STORAGE_KEEP says: the served one and the one before.
MIN_TRITON_FOLDERS = 2


@dataclass
class StoragePlan:
    """Paths to delete, how many version folders stay, the bytes each doomed path holds, and,
    once pruned, the paths that could not be deleted."""

    doomed: list[Path] = field(default_factory=list)
    kept: int = 0
    bytes_by_path: dict[Path, int] = field(default_factory=dict)
    failed: dict[Path, str] = field(default_factory=dict)

    @property
    def removed(self) -> list[Path]:
        return [p for p in self.doomed if p not in self.failed]

    @property
    def freed_mib(self) -> float:
        return round(sum(self.bytes_by_path.get(p, 0) for p in self.removed) / 2**20, 1)

    def as_dict(self, root_of: dict[str, Path]) -> dict[str, object]:
        def label(path: Path) -> str:
            for name, root in root_of.items():
                if path.is_relative_to(root):
                    return f"{name}/{path.relative_to(root)}"
            return str(path)

        return {
            "removed": [label(p) for p in self.removed],
            "failed": {label(p): reason for p, reason in self.failed.items()},
            "kept": self.kept,
            "freed_mib": self.freed_mib,
        }


def _files(path: Path) -> list[Path]:
    """Everything under path, walked without following links; a sub-folder that vanishes while
    we walk (a writer at work) is skipped instead of failing the whole plan."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(path, onerror=lambda _error: None):
        found += [Path(folder) / name for name in [*dirs, *files]]
    return found


def _size(path: Path) -> int:
    total = 0
    for item in _files(path):
        try:
            st = item.lstat()
        except FileNotFoundError:
            continue
        total += st.st_size if stat.S_ISREG(st.st_mode) else 0
    return total


def _mtime(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except FileNotFoundError:  # deleted while we looked: a writer is at work there
        return time.time()


def _young(path: Path, now: float, min_age_s: float) -> bool:
    """Written (the folder or anything in it) less than min_age_s ago."""
    newest = max((_mtime(f) for f in _files(path)), default=0.0)
    return now - max(newest, _mtime(path)) < min_age_s


def _version_folders(parent: Path, keep_name: Callable[[str], bool]) -> list[Path]:
    """Real folders (not symbolic links) under parent whose names keep_name accepts."""
    return sorted(p for p in parent.iterdir() if keep_name(p.name) and p.is_dir() and not p.is_symlink())


def _kept_versions(keep: int) -> list[ModelVersion]:
    """Per bundle: production, its rollback target and the newest `keep` rows."""
    kept: dict[int, ModelVersion] = {}
    for bundle in ModelBundle.values:
        rows = ModelVersion.objects.filter(name=bundle).order_by("-created_at", "-pk")
        for row in rows[:keep]:
            kept[row.pk] = row
        production = rows.filter(is_production=True).select_related("rollback_target").first()
        if production is not None:
            kept[production.pk] = production
            if production.rollback_target is not None:
                kept[production.rollback_target.pk] = production.rollback_target
    return list(kept.values())


def _triton_doomed(keep: int, named: dict[str, set[int]], plan: StoragePlan, now: float, min_age_s: float) -> None:
    root = repository()
    for model in ALL_MODELS:
        # Links are never touched, and do not take the place of a real folder among the newest.
        found = [n for n in repository_versions(model, repository=root) if not (root / model / str(n)).is_symlink()]
        protected = set(found[-max(keep, MIN_TRITON_FOLDERS) :]) | named.get(model, set())
        for number in found:
            folder = root / model / str(number)
            if number in protected or _young(folder, now, min_age_s):
                plan.kept += 1
                continue
            plan.doomed.append(folder)


def _current_name(kind_dir: Path) -> str | None:
    """The version `current` names (a symbolic link or a file holding the name), if any."""
    try:
        return current_dir(kind_dir, missing="").name
    except FileNotFoundError:
        return None


def _started_from(version_dir: Path, kind_dir: Path) -> str | None:
    """The version beside it that a version was trained from (a student's teacher), if any."""
    try:
        metrics = json.loads((version_dir / METRICS_FILE).read_text())
    except (OSError, ValueError):
        return None
    start = metrics.get("base_checkpoint") if isinstance(metrics, dict) else None
    return _inside(kind_dir, start)


def _inside(kind_dir: Path, checkpoint: object) -> str | None:
    """The version a checkpoint path points at: one directly in kind_dir, or, for a path recorded
    elsewhere (ARTIFACTS_DIR moved, a relative path), one of that version name that exists here.
    Matching by name as well errs towards keeping."""
    if not checkpoint:
        return None
    path = Path(str(checkpoint))
    if path.resolve().parent == kind_dir.resolve():
        return path.resolve().name
    return path.name if VERSION_NAME.match(path.name) and (kind_dir / path.name).is_dir() else None


def _artifact_doomed(keep: int, named: set[Path], plan: StoragePlan, now: float, min_age_s: float) -> None:
    root = artifacts_dir()
    for kind in ARTIFACT_KINDS:
        kind_dir = root / kind
        if not kind_dir.is_dir():
            continue
        versions = [p.name for p in _version_folders(kind_dir, lambda name: bool(VERSION_NAME.match(name)))]
        students = [name for name in versions if not name.endswith(TEACHER_SUFFIX)]
        protected = set(students[-keep:]) | {p.name for p in named if p.parent == kind_dir}
        protected |= {name for name in (_current_name(kind_dir), _inside(kind_dir, _configured_base(kind))) if name}
        protected |= {name + TEACHER_SUFFIX for name in protected}
        protected |= {t for name in list(protected) if (t := _started_from(kind_dir / name, kind_dir))}
        for name in versions:
            folder = kind_dir / name
            if name in protected or _young(folder, now, min_age_s):
                plan.kept += 1
                continue
            plan.doomed.append(folder)


def _configured_base(kind: str) -> object:
    """The checkpoint an operator told text training to start from (FEEDBACK_TEXT_BASE)."""
    return getattr(settings, "FEEDBACK_TEXT_BASE", None) if kind == "text" else None


def _run_doomed(keep: int, named: set[Path], plan: StoragePlan, now: float, min_age_s: float) -> None:
    runs_dir = artifacts_dir() / "runs"
    if not runs_dir.is_dir():
        return
    newest = set(TrainingRun.objects.order_by("-created_at", "-pk").values_list("pk", flat=True)[:keep])
    unfinished = set(
        TrainingRun.objects.exclude(status__in=(RunStatus.SUCCEEDED, RunStatus.FAILED)).values_list("pk", flat=True)
    )
    for folder in _version_folders(runs_dir, str.isdigit):
        pk = int(folder.name)
        holds_named = any(p.is_relative_to(folder) for p in named)
        if pk in newest or pk in unfinished or holds_named or _young(folder, now, min_age_s):
            plan.kept += 1
            continue
        plan.doomed.append(folder)


def storage_plan(*, keep: int | None = None, min_age_s: float | None = None) -> StoragePlan:
    """What pruning would delete now (nothing is deleted)."""
    keep = int(settings.MODEL_STORAGE_KEEP if keep is None else keep)
    min_age_s = float(settings.MODEL_STORAGE_MIN_AGE_S if min_age_s is None else min_age_s)
    if keep < 1:
        raise ValueError("keep must be at least 1: the served version is never pruned")
    plan = StoragePlan()
    kept_rows = _kept_versions(keep)
    named_triton: dict[str, set[int]] = {}
    named_paths: set[Path] = set()
    root = artifacts_dir()
    for row in kept_rows:
        for model, number in (row.triton_versions or {}).items():
            named_triton.setdefault(model, set()).add(int(number))
        if row.artifact_path:
            named_paths.add(root / row.artifact_path)
    now = time.time()
    _triton_doomed(keep, named_triton, plan, now, min_age_s)
    _artifact_doomed(keep, named_paths, plan, now, min_age_s)
    _run_doomed(keep, named_paths, plan, now, min_age_s)
    plan.bytes_by_path = {p: _size(p) for p in plan.doomed}
    return plan


def _remove(paths: Iterable[Path]) -> dict[Path, str]:
    """Delete each folder; returns the ones that could not be deleted, with the reason."""
    failed: dict[Path, str] = {}
    for path in paths:
        try:
            shutil.rmtree(path)
        except FileNotFoundError:
            if not os.path.lexists(path):
                continue  # already gone
            failed[path] = "FileNotFoundError: part of it vanished while it was deleted"
        except OSError as exc:
            failed[path] = f"{type(exc).__name__}: {exc.strerror or exc}"
            log.warning("model storage: could not delete %s: %s", path, failed[path])
    return failed


def prune_model_storage(
    *, keep: int | None = None, min_age_s: float | None = None, actor: object = None
) -> StoragePlan:
    """Delete what storage_plan names, and audit it (one row, `model_storage.pruned`)."""
    plan = storage_plan(keep=keep, min_age_s=min_age_s)
    if not plan.doomed:
        return plan
    plan.failed = _remove(plan.doomed)
    audit_record(
        actor=actor,
        action="model_storage.pruned",
        target_type="model_storage",
        after=plan.as_dict({"triton": repository(), "artifacts": artifacts_dir()}),
    )
    return plan
