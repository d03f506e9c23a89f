"""Every CSV written for people neutralises formulas (OWASP CSV Injection): the shared writer,
the dataset export and the audit export."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from core.spreadsheet import csv_writer, safe_cell
from feedback.services.datasets import dataset_file, dataset_load, dataset_snapshot
from moderation.models import AuditLog
from tests.feedback.conftest import decide, make_post

FORMULAS = ['=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\t=1", "\r=1"]


@pytest.mark.parametrize("value", FORMULAS)
def test_a_formula_cell_gets_a_leading_quote(value: str) -> None:
    assert safe_cell(value) == "'" + value


@pytest.mark.parametrize("value", ["plain", "", " =not first", "'quoted", -0.5, 3, None])
def test_other_cells_are_written_as_they_are(value: Any) -> None:
    assert safe_cell(value) == value


def test_the_writer_neutralises_every_cell() -> None:
    out = io.StringIO()
    csv_writer(out).writerow(["ok", "=1+1", -1])
    assert next(csv.reader(io.StringIO(out.getvalue()))) == ["ok", "'=1+1", "-1"]


@pytest.mark.django_db
def test_the_dataset_csv_export_neutralises_formulas_and_jsonl_keeps_the_text(
    source: Any, moderator: Any, admin_user: Any
) -> None:
    for text in FORMULAS:
        decide(make_post(source, text=text), moderator, "spam")
    dataset = dataset_snapshot(created_by=admin_user)
    with dataset_file(dataset=dataset, fmt="csv").open(newline="", encoding="utf-8") as fh:
        texts = {row["text"] for row in csv.DictReader(fh)}
    assert texts == {"'" + t for t in FORMULAS}
    assert {row["text"] for row in dataset_load(dataset=dataset)} == set(FORMULAS)


@pytest.mark.django_db
def test_the_audit_csv_neutralises_tab_and_carriage_return(admin_user: Any) -> None:
    user = admin_user
    for text in FORMULAS:
        AuditLog.objects.create(actor=user, action=text, target_type="post", target_id="1")
    client = Client()
    client.force_login(user)
    response = client.get(reverse("dashboard:audit_csv"))
    assert response.status_code == 200
    rows = list(csv.reader(io.StringIO(response.getvalue().decode())))
    cells = {cell for row in rows[1:] for cell in row}
    assert {"'" + t for t in FORMULAS} <= cells
    assert not cells & set(FORMULAS)
