"""The promotion gate's reference per suite: recorded from production at the first comparison,
kept through promotions, so rounds promoted one after another cannot each lose the tolerance
again; measured again after an erasure or, for a rate, when its threshold moves; cleared by an
admin or an override of the gate against it, audited."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse

from feedback.models import EvaluationSuite, SuiteKind, SuiteReference
from feedback.services import suite_references
from feedback.services.datasets import dataset_import
from feedback.services.erasure import examples_erase
from feedback.services.evaluation import current_thresholds
from feedback.services.gate import evaluate_suites, gate_evaluate, gate_reasons, suite_table
from feedback.services.suite_references import references_accept_override, references_clear
from feedback.services.suites import _create, suite_mark_dataset
from moderation.models import AuditLog
from tests.feedback.conftest import make_user

pytestmark = pytest.mark.django_db

THRESHOLDS = {"approve": 0.2, "remove": 0.9}


def _suite(admin: Any) -> EvaluationSuite:
    """100 spam and 100 ham rows, 20 authors (so an erasure takes some of each)."""
    rows = [
        {"source": "chirp", "author_external_id": f"author-{i % 20}", "text": f"post {i}", "label": label}
        for i, label in enumerate(["spam", "ham"] * 100)
    ]
    content = "\n".join(json.dumps(row) for row in rows).encode()
    dataset = dataset_import(content=content, fmt="jsonl", created_by=admin, name="partner")
    return suite_mark_dataset(dataset=dataset, user=admin, name="partner set")


def _missing(k: int) -> Callable[[Sequence[Mapping[str, Any]]], np.ndarray]:
    """A model that scores every row right except the first k spam rows, which it calls 0.1:
    F1 at 0.5 is 2(100 - k) / (200 - k) on the suite (k=1: 0.9950, k=2: 0.9899)."""

    def predict(rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
        out, missed = [], 0
        for row in rows:
            if row["label"] == "spam" and missed < k:
                out.append(0.1)
                missed += 1
            else:
                out.append(0.95 if row["label"] == "spam" else 0.05)
        return np.array(out)

    return predict


def _compare(suite: EvaluationSuite, candidate: int, production: int, thresholds: Mapping[str, float] = THRESHOLDS):
    suites = {
        "text": evaluate_suites(
            bundle="text",
            candidate=_missing(candidate),
            production=_missing(production),
            thresholds=thresholds,
            suites=[suite],
        )
    }
    return suites, gate_evaluate(suites)


def test_rounds_cannot_drift_past_the_tolerance_one_promotion_at_a_time(admin_user, settings):
    settings.PROMOTION_GATE_MAX_F1_DROP = 0.01
    suite = _suite(admin_user)

    # Round 1 against the first production (perfect): half a point lost, within the tolerance.
    suites, gate = _compare(suite, candidate=1, production=0)
    assert gate["held"] is False
    assert suites["text"][0]["reference"]["metrics"]["f1"] == pytest.approx(1.0)
    recorded = AuditLog.objects.get(action="suite.reference_recorded")
    assert recorded.actor is None and recorded.after["metrics"]["f1"] == pytest.approx(1.0)

    # Round 1 promoted; round 2 loses another half point: within the tolerance of the production
    # of the day (0.9950 -> 0.9899), not of the suite's reference (1.0 -> 0.9899).
    suites, gate = _compare(suite, candidate=2, production=1)
    assert gate["held"] is True
    (regression,) = gate["regressions"]
    assert regression["against"] == "reference" and regression["reference"] == pytest.approx(1.0)
    (reason,) = gate_reasons({"gate": gate})
    assert "F1 0.9899 vs the suite's reference 1.0000" in reason and "partner set" in reason
    assert AuditLog.objects.filter(action="suite.reference_recorded").count() == 1  # kept, not moved

    # Worse than both: both are reported (an override must know it leaves the reference too).
    _, gate = _compare(suite, candidate=4, production=1)
    assert [r["against"] for r in gate["regressions"]] == ["production", "reference"]
    assert len(gate_reasons({"gate": gate})) == 2


def test_a_rate_is_measured_again_only_when_its_own_threshold_moves(admin_user, settings):
    settings.PROMOTION_GATE_MAX_FPR_RISE = 0.005
    suite = _suite(admin_user)
    policy = current_thresholds()  # the live policy's dict, with its version and other thresholds
    suites, _ = _compare(suite, candidate=0, production=0, thresholds=policy)
    assert set(suites["text"][0]["reference"]["metrics"]) == {"f1", "at_remove.fpr"}
    recorded = AuditLog.objects.filter(action="suite.reference_recorded").count()

    # Another policy version with the same remove threshold: the rate stands, nothing recorded.
    _compare(suite, candidate=0, production=0, thresholds={**policy, "policy_version": 99, "approve": 0.1})
    assert AuditLog.objects.filter(action="suite.reference_recorded").count() == recorded

    # The remove threshold moved: the rate is measured again there, F1 (at 0.5) stays.
    leaky = _missing(0)

    def ham_at_0_5(rows):  # production of that day calls every ham 0.5: above a remove of 0.4
        return np.array([0.95 if r["label"] == "spam" else 0.5 for r in rows])

    moved = {**policy, "remove": 0.4}
    entries = evaluate_suites(bundle="text", candidate=leaky, production=ham_at_0_5, thresholds=moved, suites=[suite])
    reference = SuiteReference.objects.get()
    assert reference.metrics["at_remove.threshold"] == 0.4 and reference.metrics["at_remove.fpr"] == 1.0
    assert reference.metrics["f1"] == pytest.approx(1.0)
    assert entries[0]["reference"]["metrics"]["at_remove.fpr"] == 1.0
    log = AuditLog.objects.filter(action="suite.reference_recorded").latest("id")
    assert log.before["metrics"]["at_remove.threshold"] == policy["remove"]


def test_a_benign_suite_holds_rates_not_f1_and_the_abuse_model_its_queue_rate(admin_user):
    rows = [{"text": f"a kind word {i}", "label": "ham"} for i in range(50)]
    benign = _create(
        name="benign", kind=SuiteKind.BENIGN, rows=rows, dataset=None, created_by=admin_user, note="", category="abuse"
    )
    abuse_thresholds = {"approve": 0.2, "queue": 0.5, "remove": 0.9}
    entries = evaluate_suites(
        bundle="abuse", candidate=_missing(0), production=_missing(0), thresholds=abuse_thresholds, suites=[benign]
    )
    assert set(entries[0]["reference"]["metrics"]) == {"at_remove.fpr", "at_queue.fpr"}
    assert SuiteReference.objects.get(bundle="abuse").metrics["at_queue.threshold"] == 0.5


def test_a_comparison_that_finds_the_reference_just_recorded_keeps_it(admin_user, monkeypatch):
    suite = _suite(admin_user)
    _compare(suite, candidate=0, production=0)
    # A concurrent comparison recorded it between this one's first read and its lock.
    monkeypatch.setattr(suite_references, "_current", lambda suite, bundle: None)
    suites, _ = _compare(suite, candidate=0, production=3)
    assert suites["text"][0]["reference"]["metrics"]["f1"] == pytest.approx(1.0)
    assert SuiteReference.objects.count() == 1
    assert AuditLog.objects.filter(action="suite.reference_recorded").count() == 1


def test_the_first_model_sets_no_reference_and_an_erasure_measures_it_again(
    admin_user, django_capture_on_commit_callbacks
):
    suite = _suite(admin_user)
    entries = evaluate_suites(
        bundle="text", candidate=_missing(1), production=None, thresholds=THRESHOLDS, suites=[suite]
    )
    assert "reference" not in entries[0] and not SuiteReference.objects.exists()

    _compare(suite, candidate=0, production=0)
    first = SuiteReference.objects.get(suite=suite, bundle="text")
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        examples_erase(source_slug="chirp", author_external_id="author-0", post_ids=[])

    # The reference was measured on rows that are gone: the next comparison measures it again.
    suites, _ = _compare(suite, candidate=0, production=4)
    again = SuiteReference.objects.get(suite=suite, bundle="text")
    assert again.content_sha256 != first.content_sha256
    production_f1 = suites["text"][0]["production"]["f1"]
    assert again.metrics["f1"] == pytest.approx(production_f1) and production_f1 < 1.0
    log = AuditLog.objects.filter(action="suite.reference_recorded").latest("id")
    assert log.before["content_sha256"] == first.content_sha256


def test_only_an_admin_clears_a_reference_and_it_is_audited(admin_user, client, settings):
    settings.PROMOTION_GATE_MAX_F1_DROP = 0.01
    suite = _suite(admin_user)
    _compare(suite, candidate=0, production=0)
    reference = SuiteReference.objects.get()
    with pytest.raises(PermissionDenied):
        references_clear(references=[reference], actor=make_user("analyst", "analyst"))
    assert SuiteReference.objects.exists()
    staff_analyst = make_user("staff-analyst", "analyst")
    staff_analyst.is_staff = True
    staff_analyst.save()
    client.force_login(staff_analyst)
    response = client.get(reverse("admin:feedback_suitereference_changelist"))
    assert b'value="clear"' not in response.content  # the action is offered to ML admins only

    superuser = make_user("root", superuser=True)
    superuser.is_staff = True
    superuser.save()
    client.force_login(superuser)
    response = client.post(
        reverse("admin:feedback_suitereference_changelist"),
        {"action": "clear", "_selected_action": [reference.pk]},
    )
    assert response.status_code == 302 and not SuiteReference.objects.exists()
    log = AuditLog.objects.get(action="suite.reference_cleared")
    assert log.actor == superuser and log.before["metrics"]["f1"] == pytest.approx(1.0)

    # An admin accepted a lower floor: the next comparison records the production of that day.
    _, gate = _compare(suite, candidate=2, production=1)
    assert gate["held"] is False
    assert SuiteReference.objects.get().metrics["f1"] == pytest.approx(0.99497, abs=1e-4)


def test_the_suite_table_shows_the_reference_beside_production(admin_user, settings):
    settings.PROMOTION_GATE_MAX_F1_DROP = 0.01
    suite = _suite(admin_user)
    _compare(suite, candidate=0, production=0)
    suites, gate = _compare(suite, candidate=2, production=1)
    rows = suite_table({"suites": suites, "gate": gate})
    f1 = next(c for c in rows[0]["cells"] if c["label"] == "F1")
    assert f1["reference"] == pytest.approx(1.0) and f1["regression"] is True
    assert next(c for c in rows[0]["cells"] if c["label"] == "ECE")["reference"] is None  # not gated
    html = render_to_string("feedback/_suite_table.html", {"suites": rows})
    assert ">Reference</abbr>" in html
    f1_row = html.split('data-metric="F1"')[1].split("</tr>")[0]
    assert f1_row.rstrip().endswith('<td class="num">1.0000</td>')  # the reference, the row's last cell


def test_an_override_against_the_reference_clears_it(admin_user, settings):
    settings.PROMOTION_GATE_MAX_F1_DROP = 0.01
    suite = _suite(admin_user)
    _compare(suite, candidate=0, production=0)
    _, gate = _compare(suite, candidate=2, production=1)
    assert [r["against"] for r in gate["regressions"]] == ["reference"]
    old_report = {"regressions": [{k: v for k, v in gate["regressions"][0].items() if k != "suite_id"}]}
    assert references_accept_override(gate=old_report, actor=admin_user, run_id=1) == 0  # no suite named
    assert references_accept_override(gate=gate, actor=admin_user, run_id=7) == 1
    log = AuditLog.objects.get(action="suite.reference_cleared")
    assert log.actor == admin_user and "run #7" in log.after["reason"] and not SuiteReference.objects.exists()
