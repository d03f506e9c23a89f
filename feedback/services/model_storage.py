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
- the newest MODEL_STORAGE_KEEP Triton folders of every model (Triton serves the newest);
- `text/current` and `tabular/current` and the newest MODEL_STORAGE_KEEP versions beside them,
  each with its teacher (`<version>-teacher`) when it has one;
- the candidates of the newest MODEL_STORAGE_KEEP runs and of every run not finished;
- anything written in the last MODEL_STORAGE_MIN_AGE_S, so a run that has not recorded its
  candidate yet keeps it.
Datasets, the base checkpoint and anything not named like a version are never touched.

Hand-written: the rules are this project's registry (ModelVersion, TrainingRun) and its two
folder layouts; no storage library knows them.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from contracts.triton import ALL_MODELS
from contracts.triton import versions as triton_versions
from feedback.models import ModelBundle, ModelVersion, RunStatus, TrainingRun
from feedback.services.datasets import artifacts_dir
from feedback.services.promotion import repository
from moderation.services.audit import audit_record

ARTIFACT_KINDS = ("text", "tabular")
# modelops.text.train and modelops.tabular.artifacts name versions by their UTC start time.
VERSION_NAME = re.compile(r"^\d{8}T\d{6}Z(-teacher)?$")
TEACHER_SUFFIX = "-teacher"


@dataclass
class StoragePlan:
    """Paths to delete, and what they hold (MiB), per area."""

    doomed: list[Path] = field(default_factory=list)
    kept: int = 0
    bytes_by_path: dict[Path, int] = field(default_factory=dict)

    @property
    def freed_mib(self) -> float:
        return round(sum(self.bytes_by_path.values()) / 2**20, 1)

    def as_dict(self, root_of: dict[str, Path]) -> dict[str, object]:
        def label(path: Path) -> str:
            for name, root in root_of.items():
                if path.is_relative_to(root):
                    return f"{name}/{path.relative_to(root)}"
            return str(path)

        return {"removed": [label(p) for p in self.doomed], "kept": self.kept, "freed_mib": self.freed_mib}


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def _young(path: Path, now: float, min_age_s: float) -> bool:
    """Written (the folder or anything in it) less than min_age_s ago."""
    newest = max((f.stat().st_mtime for f in path.rglob("*")), default=0.0)
    return now - max(newest, path.stat().st_mtime) < min_age_s


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
        found = triton_versions(model, repository=root)
        protected = set(found[-keep:]) | named.get(model, set())
        for number in found:
            folder = root / model / str(number)
            if number in protected or _young(folder, now, min_age_s):
                plan.kept += 1
                continue
            plan.doomed.append(folder)


def _current_name(kind_dir: Path) -> str | None:
    current = kind_dir / "current"
    return current.resolve().name if current.exists() else None


def _artifact_doomed(keep: int, named: set[Path], plan: StoragePlan, now: float, min_age_s: float) -> None:
    root = artifacts_dir()
    for kind in ARTIFACT_KINDS:
        kind_dir = root / kind
        if not kind_dir.is_dir():
            continue
        versions = sorted(
            p.name for p in kind_dir.iterdir() if p.is_dir() and not p.is_symlink() and VERSION_NAME.match(p.name)
        )
        students = [name for name in versions if not name.endswith(TEACHER_SUFFIX)]
        protected = set(students[-keep:]) | {p.name for p in named if p.parent == kind_dir}
        current = _current_name(kind_dir)
        if current is not None:
            protected.add(current)
        protected |= {name + TEACHER_SUFFIX for name in protected}
        for name in versions:
            folder = kind_dir / name
            if name in protected or _young(folder, now, min_age_s):
                plan.kept += 1
                continue
            plan.doomed.append(folder)


def _run_doomed(keep: int, named: set[Path], plan: StoragePlan, now: float, min_age_s: float) -> None:
    runs_dir = artifacts_dir() / "runs"
    if not runs_dir.is_dir():
        return
    newest = set(TrainingRun.objects.order_by("-created_at", "-pk").values_list("pk", flat=True)[:keep])
    unfinished = set(
        TrainingRun.objects.exclude(status__in=(RunStatus.SUCCEEDED, RunStatus.FAILED)).values_list("pk", flat=True)
    )
    for folder in sorted(p for p in runs_dir.iterdir() if p.is_dir() and p.name.isdigit()):
        pk = int(folder.name)
        holds_named = any(p == folder or p.is_relative_to(folder) for p in named)
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


def _remove(paths: Iterable[Path]) -> None:
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)


def prune_model_storage(
    *, keep: int | None = None, min_age_s: float | None = None, actor: object = None
) -> StoragePlan:
    """Delete what storage_plan names, and audit it (one row, `model_storage.pruned`)."""
    plan = storage_plan(keep=keep, min_age_s=min_age_s)
    if not plan.doomed:
        return plan
    _remove(plan.doomed)
    audit_record(
        actor=actor,
        action="model_storage.pruned",
        target_type="model_storage",
        after=plan.as_dict({"triton": repository(), "artifacts": artifacts_dir()}),
    )
    return plan
