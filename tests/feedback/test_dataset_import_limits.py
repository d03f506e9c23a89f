"""Hostile dataset uploads: every one is a 400 (import_invalid / import_too_large) that names
line numbers, none a 500, and nothing is imported."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from core.errors import ApplicationError
from feedback.models import DatasetVersion, LabelledExample
from feedback.services import import_rows
from feedback.services.datasets import dataset_import

pytestmark = pytest.mark.django_db


def rejected(content: bytes, fmt: str, admin_user: Any) -> ApplicationError:
    with pytest.raises(ApplicationError) as exc:
        dataset_import(content=content, fmt=fmt, created_by=admin_user)
    assert exc.value.status_code == 400
    assert LabelledExample.objects.count() == 0 and DatasetVersion.objects.count() == 0
    return exc.value


def jsonl(*rows: Any) -> bytes:
    return b"".join((row if isinstance(row, bytes) else json.dumps(row).encode()) + b"\n" for row in rows)


GOOD = {"text": "win cash", "label": "spam"}


@pytest.mark.parametrize(
    ("content", "fmt", "expected"),
    [
        (jsonl(GOOD, b'{"text": "a", "label": "spam", "features": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
         "jsonl", "line 2: "),
        (jsonl(GOOD, {**GOOD, "features": {"a": {"b": {"c": {"d": 1}}}}}), "jsonl", "line 2: JSON nested deeper"),
        (b"text,label\nok,spam\n" + b'"' + b"x" * (129 * 1024) + b'",spam\n', "csv", "line 3: not valid CSV"),
        (jsonl(GOOD, {**GOOD, "decided_at": "2026-02-30T10:00:00Z"}), "jsonl", "line 2: decided_at is not a valid"),
        (jsonl({**GOOD, "decided_at": "0001-01-01T00:00:00+05:00"}), "jsonl", "line 1: decided_at is out of range"),
        (b"text,label,decided_at\nok,spam,0000-00-00\n", "csv", "line 2: decided_at"),
        (jsonl(b'{"text": "a", "label": "spam", "final_score": NaN}'), "jsonl", "line 1: NaN is not a finite"),
        (jsonl(b'{"text": "a", "label": "spam", "sub_scores": {"t": Infinity}}'), "jsonl", "Infinity"),
        (b"text,label,final_score\nok,spam,inf\n", "csv", "line 2: final_score must be a finite"),
        (b'text,label,sub_scores\nok,spam,"{""t"": NaN}"\n', "csv", "line 2: NaN"),
        (jsonl({**GOOD, "text": "nul \x00 here"}), "jsonl", "line 1: the row holds a NUL"),
        (jsonl(b'{"text": "lone \\udc00", "label": "spam"}'), "jsonl", "line 1: the row holds a lone surrogate"),
        (jsonl(b'{"\\ud800": 1, "text": "a", "label": "spam"}'), "jsonl", "line 1: the row holds a lone surrogate"),
        (b"text,label\nnul \x00 here,spam\n", "csv", "line 2:"),
        (jsonl(GOOD, b"\xff\xfe{}"), "jsonl", "line 2: not UTF-8"),
        (b"text,label\nok,spam\n\xff,ham\n", "csv", "not UTF-8"),
    ],
    ids=[
        "deep nesting", "depth limit", "csv field over 128 KiB", "2026-02-30", "year 0 in UTC", "0000-00-00",
        "NaN", "Infinity", "csv inf", "csv NaN in json", "NUL", "lone surrogate", "surrogate key", "csv NUL",
        "jsonl bad bytes", "csv bad bytes",
    ],
)  # fmt: skip
def test_hostile_rows_are_a_400_naming_the_line(content: bytes, fmt: str, expected: str, admin_user: Any) -> None:
    error = rejected(content, fmt, admin_user)
    assert error.code == "import_invalid"
    listing = " | ".join(error.fields["file"])
    assert expected in listing, listing
    assert len(listing) < 4096  # a short prefix of the input at most


def test_the_row_limit_stops_reading_at_the_first_row_too_many(
    admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(import_rows, "IMPORT_MAX_ROWS", 3)
    validated: list[Any] = []
    original = import_rows.validate_row

    def validate_row(row: Any) -> Any:
        validated.append(row)
        return original(row)

    monkeypatch.setattr(import_rows, "validate_row", validate_row)
    error = rejected(jsonl(*[GOOD] * 50), "jsonl", admin_user)
    assert error.code == "import_too_large"
    assert len(validated) == 3  # rows 5..50 were never parsed


def test_many_bad_rows_list_the_first_twenty_and_a_count(admin_user: Any) -> None:
    error = rejected(jsonl(*[{"text": "", "label": "spam"}] * 30), "jsonl", admin_user)
    assert error.fields["file"][0].startswith("line 1: ")
    assert error.fields["file"][-1] == "... and 10 more"


def test_a_long_bad_label_is_echoed_as_a_prefix(admin_user: Any) -> None:
    error = rejected(jsonl({"text": "a", "label": "x" * 100_000}), "jsonl", admin_user)
    assert len(error.fields["file"][0]) < 120


def test_valid_dates_numbers_and_unicode_still_import(admin_user: Any) -> None:
    row = {**GOOD, "decided_at": "2024-02-29T23:59:59+05:00", "final_score": 0.5, "text": "caf\u00e9 \U0001f600"}
    dataset = dataset_import(content=jsonl(row), fmt="jsonl", created_by=admin_user)
    assert dataset.example_count == 1


def test_the_upload_page_answers_400_with_the_line_numbers(client: Any, admin_user: Any) -> None:
    client.force_login(admin_user)
    bad = SimpleUploadedFile("bad.csv", b"text,label,decided_at\nok,spam,2026-02-30\n")
    response = client.post(reverse("feedback:dataset_import"), {"file": bad, "source": "seed"})
    assert response.status_code == 400
    assert "line 2: decided_at" in response.content.decode()
