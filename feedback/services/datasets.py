"""Dataset versions: immutable snapshots of labelled examples, their files, and imports.

Layout of a dataset on disk (ARTIFACTS_DIR/datasets/<version>/):
    data.jsonl     canonical: one JSON object per line, keys sorted, rows ordered by example id
    data.parquet   same rows (pyarrow); dict columns stored as JSON strings
    data.csv       same rows; dict columns stored as JSON strings; text a spreadsheet would
                   evaluate as a formula starts with ' (core.spreadsheet)
    manifest.json  content hash, counts, class balance, time range, sources, split rule, files

`content_sha256` is the SHA-256 of data.jsonl. It depends only on the examples, so the same
effective examples always give the same hash; `dataset_load` re-checks it before training reads
a single row.

The split (SPLIT_RULE) keeps every author on one side: the bucket is a hash of
(source, author external id), so no author's posts leak from train into validation or test.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from contracts.feature_schema import BEHAVIOUR_FEATURES, FUSION_FEATURES, LINK_FEATURES
from core.errors import ApplicationError, NotFound
from core.spreadsheet import csv_dict_writer
from feedback.models import (
    DatasetMember,
    DatasetOrigin,
    DatasetVersion,
    ExampleOrigin,
    LabelledExample,
)
from feedback.selectors import CONFLICT_RULE, effective_examples
from feedback.services import import_rows
from feedback.services.import_rows import JSON_COLUMNS
from moderation.categories import MODEL_CATEGORIES, SPAM, category_for_label

COLUMNS = (
    "example_id",
    "origin",
    "source",
    "post_external_id",
    "author_external_id",
    "text",
    "preview_text",
    "url",
    "label",
    "reason_code",
    "decided_by",
    "decided_at",
    "final_score",
    "model_set",
    "features",
    "sub_scores",
    "model_versions",
    "split",
)
FILES = ("data.jsonl", "data.parquet", "data.csv")

SPLIT_RULE: dict[str, Any] = {
    "name": "author-hash-v1",
    "key": "sha256('<source>:<author_external_id>'); rows without an author: sha256('text:' + text)",
    "bucket": "int(first 8 hex digits, 16) % 100",
    "train": [0, 70],
    "validation": [70, 85],
    "test": [85, 100],
}

# Import limits (documented in the import form and README).
IMPORT_MAX_BYTES: int = getattr(settings, "FEEDBACK_IMPORT_MAX_BYTES", 20 * 1024 * 1024)


def artifacts_dir() -> Path:
    return Path(str(settings.ARTIFACTS_DIR))


def dataset_dir(dataset: DatasetVersion) -> Path:
    return artifacts_dir() / dataset.path


def split_for(*, source: str, author_external_id: str, text: str) -> str:
    key = f"{source}:{author_external_id}" if author_external_id else "text:" + text.strip().lower()
    bucket = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) % 100
    if bucket < SPLIT_RULE["train"][1]:
        return "train"
    if bucket < SPLIT_RULE["validation"][1]:
        return "validation"
    return "test"


def example_row(example: LabelledExample) -> dict[str, Any]:
    return {
        "example_id": example.pk,
        "origin": example.origin,
        "source": example.source_slug,
        "post_external_id": example.post_external_id,
        "author_external_id": example.author_external_id,
        "text": example.text,
        "preview_text": example.preview_text,
        "url": example.url,
        "label": example.label,
        "reason_code": example.reason_code,
        "decided_by": example.decided_by_username,
        "decided_at": example.decided_at.isoformat(),
        "final_score": example.final_score,
        "model_set": example.model_set,
        "features": example.features,
        "sub_scores": example.sub_scores,
        "model_versions": example.model_versions,
        "split": split_for(
            source=example.source_slug, author_external_id=example.author_external_id, text=example.text
        ),
    }


def canonical_jsonl(rows: Sequence[dict[str, Any]]) -> bytes:
    lines = (json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False) for row in rows)
    return "".join(line + "\n" for line in lines).encode("utf-8")


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    flat = dict(row)
    for col in JSON_COLUMNS:
        flat[col] = json.dumps(row[col], sort_keys=True, separators=(",", ":"))
    return flat


def write_parquet(rows: Sequence[dict[str, Any]], path: Path) -> None:
    # pyarrow only when a snapshot is written: the web process imports this module for the
    # dataset pages and would otherwise map it (tens of MB resident) for nothing.
    import pyarrow as pa
    import pyarrow.parquet as pq

    flat = [_flat(r) for r in rows]
    schema = pa.schema(
        [
            ("example_id", pa.int64()),
            *[(c, pa.string()) for c in COLUMNS if c not in ("example_id", "final_score")],
            ("final_score", pa.float64()),
        ]
    )
    table = pa.table({name: [r[name] for r in flat] for name in schema.names}, schema=schema)
    pq.write_table(table, path)


def write_csv(rows: Sequence[dict[str, Any]], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        # For people (spreadsheets): formula-like text gets a leading quote; data.jsonl is exact.
        writer = csv_dict_writer(fh, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow(_flat(row))


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def build_manifest(rows: Sequence[dict[str, Any]], *, content_sha256: str, origin: str) -> dict[str, Any]:
    labels = Counter(r["label"] for r in rows)
    per_split: dict[str, dict[str, int]] = {}
    for r in rows:
        bucket = per_split.setdefault(r["split"], {"spam": 0, "ham": 0, "authors": 0})
        bucket[r["label"]] += 1
    for split in per_split:
        per_split[split]["authors"] = len(
            {(r["source"], r["author_external_id"]) for r in rows if r["split"] == split and r["author_external_id"]}
        )
    decided = sorted(r["decided_at"] for r in rows)
    total = len(rows)
    return {
        "format": "feedback-dataset/1",
        "origin": origin,
        "content_sha256": content_sha256,
        "content_hash_of": "data.jsonl (canonical: sorted keys, compact separators, rows by example_id)",
        "counts": {"total": total, "spam": labels.get("spam", 0), "ham": labels.get("ham", 0)},
        "class_balance": {"spam": round(labels.get("spam", 0) / total, 4) if total else 0.0},
        "splits": per_split,
        "time_range": {
            "first_decided_at": decided[0] if decided else None,
            "last_decided_at": decided[-1] if decided else None,
        },
        "sources": dict(sorted(Counter(r["source"] for r in rows).items())),
        "origins": dict(sorted(Counter(r["origin"] for r in rows).items())),
        "with_features": sum(1 for r in rows if r["features"]),
        "split_rule": SPLIT_RULE,
        "conflict_rule": CONFLICT_RULE,
        "feature_schema": {
            "link": list(LINK_FEATURES),
            "behaviour": list(BEHAVIOUR_FEATURES),
            "fusion": list(FUSION_FEATURES),
        },
        "columns": list(COLUMNS),
    }


def _write_files(rows: Sequence[dict[str, Any]], target: Path, manifest_base: dict[str, Any]) -> dict[str, Any]:
    target.mkdir(parents=True)
    jsonl = canonical_jsonl(rows)
    (target / "data.jsonl").write_bytes(jsonl)
    write_parquet(rows, target / "data.parquet")
    write_csv(rows, target / "data.csv")
    manifest = dict(manifest_base)
    manifest["files"] = {
        name: {"sha256": _sha256_file(target / name), "bytes": (target / name).stat().st_size} for name in FILES
    }
    return manifest


@dataclass(frozen=True)
class _Prepared:
    rows: list[dict[str, Any]]
    content_sha256: str


def _prepare(examples: Iterable[LabelledExample]) -> _Prepared:
    rows = [example_row(e) for e in sorted(examples, key=lambda e: e.pk)]
    return _Prepared(rows=rows, content_sha256=hashlib.sha256(canonical_jsonl(rows)).hexdigest())


def _create_version(
    *,
    prepared: _Prepared,
    origin: str,
    name: str,
    created_by: Any,
    extra_manifest: dict[str, Any],
) -> DatasetVersion:
    if not prepared.rows:
        raise ApplicationError("There are no labelled examples to put in a dataset.", code="empty_dataset")
    base = build_manifest(prepared.rows, content_sha256=prepared.content_sha256, origin=origin)
    base.update(extra_manifest)
    root = artifacts_dir() / "datasets"
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=root))
    try:
        manifest = _write_files(prepared.rows, staging / "d", base)
        for _attempt in range(5):
            try:
                with transaction.atomic():
                    version = (DatasetVersion.objects.aggregate(m=Max("version"))["m"] or 0) + 1
                    manifest["version"] = version
                    manifest["created_at"] = timezone.now().isoformat()
                    (staging / "d" / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))
                    counts = manifest["counts"]
                    dataset = DatasetVersion.objects.create(
                        version=version,
                        name=name or f"dataset v{version}",
                        origin=origin,
                        content_sha256=prepared.content_sha256,
                        manifest=manifest,
                        example_count=counts["total"],
                        spam_count=counts["spam"],
                        ham_count=counts["ham"],
                        path=f"datasets/{version}",
                        created_by=created_by,
                    )
                    DatasetMember.objects.bulk_create(
                        [
                            DatasetMember(dataset=dataset, example_id=row["example_id"], split=row["split"])
                            for row in prepared.rows
                        ],
                        batch_size=2000,
                    )
                    final = root / str(version)
                    if final.exists():  # left by a crashed run that never committed its row
                        shutil.rmtree(final)
                    (staging / "d").rename(final)
                return dataset
            except IntegrityError:
                continue  # another snapshot took this version number; take the next one
        raise ApplicationError("Could not allocate a dataset version; try again.", code="dataset_version_busy")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def dataset_snapshot(
    *,
    created_by: Any,
    name: str = "",
    sources: Sequence[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    model: str = SPAM,
) -> DatasetVersion:
    """Snapshot the effective labelled examples (one per post, CONFLICT_RULE) into a new version.

    `model` (a key of moderation.categories.MODEL_CATEGORIES) picks the examples by category:
    the spam model's dataset holds spam/scam labels and approvals, the abuse model's holds
    abuse/harassment and hate labels and approvals. A row's label keeps its meaning of "removed"
    (spam) or "approved" (ham); the manifest says which model's positives "spam" stands for."""
    if model not in MODEL_CATEGORIES:
        raise ApplicationError(f"Unknown model {model!r}.", code="invalid_model", fields={"model": ["unknown"]})
    categories = MODEL_CATEGORIES[model]
    examples = effective_examples(sources=sources, since=since, until=until, categories=categories)
    prepared = _prepare(examples)
    filters = {
        "sources": list(sources or []),
        "since": since.isoformat() if since else None,
        "until": until.isoformat() if until else None,
    }
    extra: dict[str, Any] = {"filters": filters}
    if model != SPAM:  # a spam dataset's manifest stays as it always was
        extra.update({"model": model, "categories": list(categories)})
    return _create_version(
        prepared=prepared,
        origin=DatasetOrigin.SNAPSHOT,
        name=name or (f"{model} dataset" if model != SPAM else ""),
        created_by=created_by,
        extra_manifest=extra,
    )


def dataset_model(dataset: DatasetVersion) -> str:
    """The model a dataset was built for (its manifest's "model"; spam for every older one)."""
    return str((dataset.manifest or {}).get("model") or SPAM)


# --- reading ------------------------------------------------------------------------------


def dataset_verify(*, dataset: DatasetVersion) -> bytes:
    """The dataset's canonical JSONL, after checking it still matches the manifest hash."""
    path = dataset_dir(dataset) / "data.jsonl"
    if not path.exists():
        raise NotFound(f"Dataset v{dataset.version} has no data file at {path}.", code="dataset_missing")
    data = path.read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    # Rows erased on request (feedback.services.erasure) change the file on purpose; the latest
    # erasure record holds the hash it must have now.
    latest_erasure = dataset.erasures.order_by("-created_at", "-id").first()
    expected = latest_erasure.content_sha256 if latest_erasure is not None else dataset.content_sha256
    if actual != expected:
        raise ApplicationError(
            f"Dataset v{dataset.version} was modified on disk: sha256 {actual} != manifest {expected}.",
            code="dataset_tampered",
        )
    return data


def dataset_load(*, dataset: DatasetVersion) -> list[dict[str, Any]]:
    data = dataset_verify(dataset=dataset)
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line]


def dataset_file(*, dataset: DatasetVersion, fmt: str) -> Path:
    names = {"jsonl": "data.jsonl", "parquet": "data.parquet", "csv": "data.csv", "manifest": "manifest.json"}
    if fmt not in names:
        raise NotFound(f"Unknown format {fmt!r}.")
    path = dataset_dir(dataset) / names[fmt]
    if not path.exists():
        raise NotFound(f"Dataset v{dataset.version} has no {names[fmt]}.", code="dataset_missing")
    return path


# --- import (reading and checking rows: feedback.services.import_rows) ----------------------


@transaction.atomic
def dataset_import(
    *,
    content: bytes,
    fmt: str,
    created_by: Any,
    source_slug: str = "import",
    name: str = "",
) -> DatasetVersion:
    """Import labelled rows (JSONL or CSV, at least `text` and `label`) and snapshot exactly
    those rows into a new dataset version. All or nothing: one invalid row rejects the file and
    the error (code import_invalid, status 400) lists the first problems with their line
    numbers; the limits are import_rows'."""
    if len(content) > IMPORT_MAX_BYTES:
        raise ApplicationError(
            f"The file is larger than {IMPORT_MAX_BYTES // (1024 * 1024)} MB.",
            code="import_too_large",
            fields={"file": [f"{len(content)} bytes"]},
        )
    valid, problems, count = import_rows.read_rows(content, fmt)
    if problems.count:
        raise ApplicationError(
            f"The file is invalid ({problems.count} problems in {count} rows); nothing was imported.",
            code="import_invalid",
            fields={"file": problems.listing()},
        )
    if not valid:
        raise ApplicationError("The file has no rows.", code="import_invalid", fields={"file": ["empty"]})
    username = created_by.get_username() if created_by is not None else ""
    examples = LabelledExample.objects.bulk_create(
        [
            LabelledExample(
                origin=ExampleOrigin.IMPORT,
                source_slug=v["source"] or source_slug,
                post_external_id=v["post_external_id"],
                author_external_id=v["author_external_id"],
                text=v["text"],
                preview_text=v["preview_text"],
                url=v["url"],
                features=v["features"],
                sub_scores=v["sub_scores"],
                final_score=v["final_score"],
                model_set=v["model_set"],
                model_versions=v["model_versions"],
                label=v["label"],
                reason_code=v["reason_code"],
                # An imported file is a spam / ham dataset: its labels mean what they always did.
                category=category_for_label(v["label"]),
                decided_by=created_by,
                decided_by_username=username,
                decided_by_admin=True,
                decided_at=v["decided_at"],
            )
            for v in valid
        ],
        batch_size=2000,
    )
    return _create_version(
        prepared=_prepare(examples),
        origin=DatasetOrigin.IMPORT,
        name=name,
        created_by=created_by,
        extra_manifest={"import": {"format": fmt, "rows": len(valid), "bytes": len(content)}},
    )


def dataset_snapshot_if_changed(*, name: str = "scheduled snapshot") -> DatasetVersion | None:
    """A snapshot by the schedule (no user): skipped when the content hash equals the latest
    snapshot's, so a quiet week does not create identical versions."""
    prepared = _prepare(effective_examples())
    # Compared with the latest spam snapshot: an abuse model's snapshot in between is no change.
    spam_snapshots = DatasetVersion.objects.filter(origin=DatasetOrigin.SNAPSHOT).exclude(manifest__has_key="model")
    latest = spam_snapshots.order_by("-version").first()
    if not prepared.rows or (latest is not None and latest.content_sha256 == prepared.content_sha256):
        return None
    return _create_version(
        prepared=prepared,
        origin=DatasetOrigin.SNAPSHOT,
        name=name,
        created_by=None,
        extra_manifest={"filters": {"sources": [], "since": None, "until": None}, "scheduled": True},
    )
