"""An author's data erased on request leaves the training data too: the labelled examples made
from their posts are deleted (LabelledExample allows deletion for exactly this), later
snapshots therefore leave them out, and every frozen dataset version that held them gets its
files rewritten without those rows and a DatasetErasure record of the exclusion, which lists
the model versions trained on that dataset version for retraining. Evaluation
suites hold their own frozen copy of rows: every suite holding the author's rows gets its rows
file rewritten without them and a SuiteErasure record (the new hash and the counts left).

Runs inside the erasure's transaction (moderation.signals.author_erased); the files are
replaced after commit, each written beside the old one and renamed over it."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import Q

from feedback.models import (
    DatasetErasure,
    DatasetMember,
    DatasetVersion,
    EvaluationSuite,
    LabelledExample,
    ModelVersion,
    SuiteErasure,
    SuiteKind,
)
from feedback.services import datasets, suites

logger = logging.getLogger(__name__)


def examples_erase(*, source_slug: str, author_external_id: str, post_ids: Sequence[int]) -> int:
    """Delete the author's examples and take them out of every dataset version and evaluation
    suite. Returns how many examples were deleted."""
    examples = LabelledExample.objects.filter(
        Q(post_id__in=list(post_ids)) | Q(source_slug=source_slug, author_external_id=author_external_id)
    )
    example_ids = set(examples.values_list("pk", flat=True))
    suite_rewrites = _suites_erase(
        example_ids=example_ids, source_slug=source_slug, author_external_id=author_external_id
    )
    transaction.on_commit(lambda: _suite_rewrite_all(suite_rewrites))
    if not example_ids:
        return 0
    rewrites: list[tuple[Path, list[dict[str, Any]]]] = []
    for dataset in DatasetVersion.objects.filter(members__example_id__in=example_ids).distinct():
        rows = [row for row in _current_rows(dataset) if row.get("example_id") not in example_ids]
        digest = hashlib.sha256(datasets.canonical_jsonl(rows)).hexdigest()
        removed = DatasetMember.objects.filter(dataset=dataset, example_id__in=example_ids).delete()[0]
        DatasetErasure.objects.create(
            dataset=dataset,
            examples_removed=removed,
            content_sha256=digest,
            models_to_retrain=_trained_on(dataset),
        )
        rewrites.append((datasets.dataset_dir(dataset), rows))
    examples.delete()
    transaction.on_commit(lambda: _rewrite_all(rewrites))
    return len(example_ids)


def _trained_on(dataset: DatasetVersion) -> list[dict[str, Any]]:
    """The model versions whose weights were fitted on `dataset` (directly or through their
    training run): deleting rows from the files does not take them out of those weights."""
    versions = ModelVersion.objects.filter(Q(dataset=dataset) | Q(training_run__dataset=dataset)).order_by("pk")
    return [
        {"id": v.pk, "name": v.name, "version": v.version, "is_production": v.is_production}
        for v in versions.distinct()
    ]


def _suites_erase(
    *, example_ids: set[int], source_slug: str, author_external_id: str
) -> list[tuple[Path, list[dict[str, Any]]]]:
    """Record the removal of the author's rows from every suite holding them; returns the files
    to rewrite after commit. Every suite but the bootstrap one is read, not only those linked to
    the author's datasets: a suite keeps its rows when its dataset is deleted (dataset set to
    NULL). suite_rows checks each file first, so a tampered suite stops the erasure with
    SuiteTampered instead of being re-hashed as if it were genuine."""

    def is_theirs(row: dict[str, Any]) -> bool:
        if row.get("example_id") in example_ids:
            return True
        return bool(author_external_id) and (row.get("source"), row.get("author_external_id")) == (
            source_slug,
            author_external_id,
        )

    rewrites: list[tuple[Path, list[dict[str, Any]]]] = []
    for suite in (
        EvaluationSuite.objects.exclude(kind__in=[SuiteKind.BOOTSTRAP, SuiteKind.BENIGN])
        .order_by("pk")
        .select_for_update()
    ):
        path = suites.suite_file(suite)
        if not path.exists():  # nothing readable to erase
            continue
        rows = suites.suite_rows(suite)
        kept = [row for row in rows if not is_theirs(row)]
        if len(kept) == len(rows):
            continue
        SuiteErasure.objects.create(
            suite=suite,
            rows_removed=len(rows) - len(kept),
            row_count=len(kept),
            spam_count=sum(1 for row in kept if row.get("label") == "spam"),
            content_sha256=hashlib.sha256(datasets.canonical_jsonl(kept)).hexdigest(),
        )
        rewrites.append((path, kept))
    return rewrites


def _suite_rewrite_all(rewrites: list[tuple[Path, list[dict[str, Any]]]]) -> None:
    for path, rows in rewrites:
        if not path.parent.exists():
            continue
        staging = path.with_name(f".{path.name}.erasing")
        staging.write_bytes(datasets.canonical_jsonl(rows))
        os.replace(staging, path)
        logger.info("feedback.suite_rows_erased path=%s rows_now=%s", path, len(rows))


def _current_rows(dataset: DatasetVersion) -> list[dict[str, Any]]:
    path = datasets.dataset_dir(dataset) / "data.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]


def _rewrite_all(rewrites: list[tuple[Path, list[dict[str, Any]]]]) -> None:
    for directory, rows in rewrites:
        if directory.exists():
            _rewrite(directory, rows)


def _rewrite(directory: Path, rows: list[dict[str, Any]]) -> None:
    """data.jsonl, data.parquet and data.csv without the erased rows; manifest.json notes it."""
    writers = {
        "data.jsonl": lambda path: path.write_bytes(datasets.canonical_jsonl(rows)),
        "data.parquet": lambda path: datasets.write_parquet(rows, path),
        "data.csv": lambda path: datasets.write_csv(rows, path),
    }
    for name, write in writers.items():
        staging = directory / f".{name}.erasing"
        write(staging)
        os.replace(staging, directory / name)
    manifest_path = directory / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text("utf-8"))
        manifest.setdefault("erasures", []).append({"rows_now": len(rows)})
        manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True))
    logger.info("feedback.dataset_rows_erased path=%s rows_now=%s", directory, len(rows))


def on_author_erased(
    sender: Any, *, source_slug: str, author_external_id: str, post_ids: Sequence[int], **kwargs: Any
) -> None:
    """Signal receiver. Unlike a label, an erasure must not half-happen: a failure here rolls
    the whole erasure back."""
    examples_erase(source_slug=source_slug, author_external_id=author_external_id, post_ids=post_ids)
