"""An author's rows erased from evaluation suites: the rows file is rewritten, the new hash is
recorded beside the immutable suite row, and the hash check still refuses any other change."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from django.db import transaction

from feedback.models import EvaluationSuite, SuiteErasure
from feedback.services.datasets import dataset_import
from feedback.services.erasure import examples_erase
from feedback.services.gate import evaluate_suites
from feedback.services.suites import SuiteTampered, suite_file, suite_for_dataset_test, suite_mark_dataset, suite_rows

pytestmark = pytest.mark.django_db


def _dataset(admin: Any) -> Any:
    rows = [
        {"source": "chirp", "author_external_id": f"author-{i % 20}", "text": f"post {i} by {i % 20}", "label": label}
        for i, label in enumerate(["spam", "ham"] * 60)
    ]
    content = "\n".join(json.dumps(row) for row in rows).encode()
    return dataset_import(content=content, fmt="jsonl", created_by=admin, name="imported")


def _erase(author: str, capture: Any) -> None:
    with capture(execute=True), transaction.atomic():
        examples_erase(source_slug="chirp", author_external_id=author, post_ids=[])


def _authors(suite: EvaluationSuite) -> set[str]:
    return {row["author_external_id"] for row in suite_rows(suite)}


def test_an_erased_authors_rows_leave_every_suite_and_the_rest_still_loads(
    admin_user, django_capture_on_commit_callbacks
):
    dataset = _dataset(admin_user)
    marked = suite_mark_dataset(dataset=dataset, user=admin_user)
    test_split = suite_for_dataset_test(dataset=dataset)
    assert test_split is not None
    victim = next(iter(_authors(test_split)))  # the split keeps an author's rows together
    assert victim in _authors(marked)
    before = {suite.pk: len(suite_rows(suite)) for suite in (marked, test_split)}

    _erase(victim, django_capture_on_commit_callbacks)

    for suite in (marked, test_split):
        suite = EvaluationSuite.objects.get(pk=suite.pk)
        assert victim not in _authors(suite) and f'by {victim.split("-")[1]}"' not in suite_file(suite).read_text()
        erasure = SuiteErasure.objects.get(suite=suite)
        assert erasure.rows_removed == 6 and erasure.row_count == before[suite.pk] - 6 == len(suite_rows(suite))
        assert suite.row_count == before[suite.pk]  # the counts at freezing


def test_a_tampered_suite_is_still_refused_after_an_erasure(admin_user, django_capture_on_commit_callbacks):
    suite = suite_mark_dataset(dataset=_dataset(admin_user), user=admin_user)
    _erase("author-3", django_capture_on_commit_callbacks)
    path = suite_file(suite)
    path.write_text(path.read_text().replace('"label":"spam"', '"label":"ham"', 1))
    with pytest.raises(SuiteTampered):
        suite_rows(EvaluationSuite.objects.get(pk=suite.pk))


def test_an_erasure_does_not_rehash_a_tampered_suite(admin_user, django_capture_on_commit_callbacks):
    suite = suite_mark_dataset(dataset=_dataset(admin_user), user=admin_user)
    path = suite_file(suite)
    path.write_text(path.read_text().replace('"label":"spam"', '"label":"ham"', 1))
    with pytest.raises(SuiteTampered):
        _erase("author-3", django_capture_on_commit_callbacks)
    assert not SuiteErasure.objects.exists()
    with pytest.raises(SuiteTampered):
        suite_rows(suite)


def test_a_suite_emptied_by_erasures_stays_and_evaluation_skips_it(admin_user, django_capture_on_commit_callbacks):
    rows = [{"source": "chirp", "author_external_id": "solo", "text": f"only {i}", "label": "spam"} for i in range(4)]
    content = "\n".join(json.dumps(row) for row in rows).encode()
    suite = suite_mark_dataset(
        dataset=dataset_import(content=content, fmt="jsonl", created_by=admin_user), user=admin_user
    )
    _erase("solo", django_capture_on_commit_callbacks)
    (entry,) = evaluate_suites(
        bundle="text",
        candidate=lambda rs: np.full(len(rs), 0.5),
        production=None,
        thresholds={"remove": 0.9, "approve": 0.1},
        suites=[EvaluationSuite.objects.get(pk=suite.pk)],
    )
    assert entry["n"] == 0 and entry["skipped"] == "0 usable rows, 0 spam"
