"""The promotion gate's reference on each suite (feedback.models.SuiteReference): what production
scored there the first time a candidate of a bundle was compared with it.

The gate holds a candidate that loses more than its tolerance against the production of the
day; on its own that lets rounds drift, each within the tolerance of the one before (an
adaptation round every few hundred labels, promoted automatically, can walk the SMS suite down
a point at a time). Against the reference as well, the losses cannot add up past the tolerance.

Recorded automatically, from the production of the day, when a suite has none for the bundle,
and again when the suite's rows changed since (an author's data erased: the old figures were
measured on rows that are gone). It moves with no promotion, an admin's override included; an
admin who accepts a lower floor clears it (reference_clear, audited) and the next comparison
records the production of that day.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import IntegrityError, transaction

from feedback.models import EvaluationSuite, SuiteReference
from feedback.permissions import check_ml_admin
from feedback.services.suites import suite_expected_sha256
from moderation.services.audit import audit_record


def _metric(metrics: Mapping[str, Any], path: str) -> float | None:
    node: Any = metrics
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return float(node) if isinstance(node, int | float) and not isinstance(node, bool) else None


def reference_view(reference: SuiteReference) -> dict[str, Any]:
    """What a run's report keeps of the reference it was judged against."""
    return {
        "metrics": dict(reference.metrics),
        "thresholds": dict(reference.thresholds),
        "recorded_at": reference.created_at.isoformat(),
    }


def reference_for(
    *,
    suite: EvaluationSuite,
    bundle: str,
    production: Mapping[str, Any],
    thresholds: Mapping[str, Any],
    paths: Iterable[str],
) -> dict[str, Any]:
    """The suite's reference for `bundle`: the one recorded, or `production`'s metrics at
    `paths`, recorded now (with an AuditLog row) when there is none on the suite's current rows."""
    rows_sha = suite_expected_sha256(suite)
    current = SuiteReference.objects.filter(suite=suite, bundle=bundle).first()
    if current is not None and current.content_sha256 == rows_sha:
        return reference_view(current)
    values = {path: value for path in paths if (value := _metric(production, path)) is not None}
    try:
        with transaction.atomic():
            stale = SuiteReference.objects.select_for_update().filter(suite=suite, bundle=bundle).first()
            if stale is not None and stale.content_sha256 == rows_sha:
                return reference_view(stale)  # recorded by a concurrent comparison
            before = {"metrics": stale.metrics, "content_sha256": stale.content_sha256} if stale else None
            if stale is not None:
                stale.delete()
            reference = SuiteReference.objects.create(
                suite=suite, bundle=bundle, metrics=values, thresholds=dict(thresholds), content_sha256=rows_sha
            )
            audit_record(
                actor=None,
                action="suite.reference_recorded",
                target=suite,
                before=before,
                after={"bundle": bundle, "metrics": values, "content_sha256": rows_sha},
            )
    except IntegrityError:  # a concurrent comparison recorded it first
        reference = SuiteReference.objects.get(suite=suite, bundle=bundle)
    return reference_view(reference)


def reference_clear(*, reference: SuiteReference, actor: Any) -> None:
    """An admin's: drop the reference, so the next comparison on the suite records the production
    of that day as the floor (after accepting a model the gate held, say)."""
    check_ml_admin(actor)
    with transaction.atomic():
        audit_record(
            actor=actor,
            action="suite.reference_cleared",
            target=reference.suite,
            before={"bundle": reference.bundle, "metrics": reference.metrics},
        )
        reference.delete()
