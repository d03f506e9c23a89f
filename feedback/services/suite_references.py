"""The promotion gate's reference on each suite (feedback.models.SuiteReference): what production
scored there the first time a candidate of a bundle was compared with it.

The gate holds a candidate that loses more than its tolerance against the production of the
day; on its own that lets rounds drift, each within the tolerance of the one before (an
adaptation round every few hundred labels, promoted automatically, can walk the SMS suite down
a point at a time). Against the reference as well, the losses cannot add up past the tolerance.

Recorded from the production of the day when a suite has none for the bundle, and again when the
suite's rows changed since (an author's data erased: the old figures were measured on rows that
are gone, and the production of that day becomes the floor). A false-positive rate is recorded
with the threshold it was measured at and measured again when the live threshold moves (an
admin's policy change: the old rate says nothing about the new threshold). No promotion moves it.
An admin who overrides the gate against it accepts the candidate's figures there: the override
clears it (references_accept_override), as an admin's clear in Django's admin does
(references_clear); both are audited, and the next comparison records the production of that day.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import IntegrityError, transaction

from feedback.models import EvaluationSuite, ModelVersion, SuiteReference
from feedback.permissions import check_ml_admin
from moderation.services.audit import audit_record

# A rate's path and the path of the threshold it is measured at (feedback.services.evaluation).
RATE_THRESHOLD = {"at_remove.fpr": "at_remove.threshold", "at_queue.fpr": "at_queue.threshold"}


def reference_view(reference: SuiteReference) -> dict[str, Any]:
    """What a run's report keeps of the reference it was judged against."""
    return {
        "metrics": {path: value for path, value in reference.metrics.items() if not path.endswith(".threshold")},
        "production_version": reference.production_version,
        "recorded_at": reference.created_at.isoformat(),
    }


def _moved_rates(recorded: Mapping[str, Any], production: Mapping[str, float]) -> list[str]:
    """The rates whose live threshold is not the one they were recorded at (or that were not
    recorded: a bundle given a queue threshold since)."""
    return [
        path
        for path, threshold in RATE_THRESHOLD.items()
        if path in production and (path not in recorded or recorded.get(threshold) != production.get(threshold))
    ]


def _with_thresholds(production: Mapping[str, float], paths: Iterable[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for path in paths:
        if path in production:
            out[path] = production[path]
        if path in RATE_THRESHOLD and RATE_THRESHOLD[path] in production:
            out[RATE_THRESHOLD[path]] = production[RATE_THRESHOLD[path]]
    return out


def _production_version(bundle: str) -> int | None:
    return ModelVersion.objects.filter(name=bundle, is_production=True).values_list("version", flat=True).first()


def _as_before(reference: SuiteReference) -> dict[str, Any]:
    """A reference as its AuditLog row's `before` keeps it."""
    return {"metrics": dict(reference.metrics), "content_sha256": reference.content_sha256}


def _current(suite: EvaluationSuite, bundle: str) -> SuiteReference | None:
    return SuiteReference.objects.filter(suite=suite, bundle=bundle).first()


def reference_for(
    *, suite: EvaluationSuite, bundle: str, rows_sha256: str, production: Mapping[str, float]
) -> dict[str, Any]:
    """The suite's reference for `bundle` (reference_view), recorded from `production` first
    where there is none on these rows, or a rate's threshold moved.

    `production`: the production model's gated metrics on the suite by path ("f1",
    "at_remove.fpr"), with each rate's threshold ("at_remove.threshold"). `rows_sha256`: the hash
    of the rows they were measured on, read before the rows were, so a concurrent erasure leaves a
    reference that the next comparison measures again rather than one filed under rows it was
    not measured on."""
    current = _current(suite, bundle)
    if current is not None and current.content_sha256 == rows_sha256 and not _moved_rates(current.metrics, production):
        return reference_view(current)
    with transaction.atomic():
        locked = SuiteReference.objects.select_for_update().filter(suite=suite, bundle=bundle).first()
        if locked is not None and locked.content_sha256 == rows_sha256:
            moved = _moved_rates(locked.metrics, production)
            if moved:  # the same rows, a threshold moved: those rates only, at the new threshold
                before: dict[str, Any] | None = _as_before(locked)
                locked.metrics = {**locked.metrics, **_with_thresholds(production, moved)}
                locked.save(update_fields=["metrics"])
                _audit_recorded(suite, bundle, before=before, after=locked.metrics, rows_sha256=rows_sha256)
            return reference_view(locked)  # or recorded by a concurrent comparison
        before = _as_before(locked) if locked is not None else None
        if locked is not None:  # measured on rows that are gone
            locked.delete()
        values = dict(production)
        try:
            with transaction.atomic():
                reference = SuiteReference.objects.create(
                    suite=suite,
                    bundle=bundle,
                    metrics=values,
                    production_version=_production_version(bundle),
                    content_sha256=rows_sha256,
                )
        except IntegrityError:  # a concurrent comparison recorded it first
            return reference_view(SuiteReference.objects.get(suite=suite, bundle=bundle))
        _audit_recorded(suite, bundle, before=before, after=values, rows_sha256=rows_sha256)
    return reference_view(reference)


def _audit_recorded(
    suite: EvaluationSuite, bundle: str, *, before: Mapping[str, Any] | None, after: Mapping[str, Any], rows_sha256: str
) -> None:
    audit_record(
        actor=None,
        action="suite.reference_recorded",
        target=suite,
        before={"bundle": bundle, **before} if before is not None else None,
        after={
            "bundle": bundle,
            "metrics": dict(after),
            "production_version": _production_version(bundle),
            "content_sha256": rows_sha256,
        },
    )


def _clear(suite_id: int, bundle: str, *, actor: Any, reason: str) -> bool:
    """Delete the reference as it is now (locked), audited; False when there was none."""
    reference = (
        SuiteReference.objects.select_for_update(of=("self",))
        .select_related("suite")
        .filter(suite_id=suite_id, bundle=bundle)
        .first()
    )
    if reference is None:
        return False
    audit_record(
        actor=actor,
        action="suite.reference_cleared",
        target=reference.suite,
        before={"bundle": bundle, "metrics": reference.metrics, "production_version": reference.production_version},
        after={"reason": reason},
    )
    reference.delete()
    return True


def references_clear(*, references: Iterable[SuiteReference], actor: Any) -> int:
    """An admin's: drop these references, so the next comparison on each suite records the
    production of that day as the floor. Returns how many were cleared."""
    check_ml_admin(actor)
    with transaction.atomic():
        return sum(_clear(r.suite_id, r.bundle, actor=actor, reason="cleared by an admin") for r in list(references))


def references_accept_override(*, gate: Mapping[str, Any], actor: Any, run_id: int) -> int:
    """An admin promoted a held candidate: the references it fell below are the floor the admin
    accepted to leave, so they are cleared (audited, in the caller's transaction) and the next
    comparison records the new production. Without this every later round would be held against
    a floor the admin already overrode. Returns how many were cleared."""
    keys = {
        (int(r["suite_id"]), str(r["bundle"]))
        for r in gate.get("regressions", [])
        if r.get("against") == "reference" and r.get("suite_id") is not None  # older reports name no suite id
    }
    reason = f"the gate was overridden to promote run #{run_id}"
    with transaction.atomic():
        return sum(_clear(suite_id, bundle, actor=actor, reason=reason) for suite_id, bundle in sorted(keys))
