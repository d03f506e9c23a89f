"""What the text model's rounds (feedback.services.adaptation) and the abuse model's
(feedback.services.abuse_adaptation) share: how many labels arrived since a model's last round,
and what a round does with its candidate: promoted when the promotion gate passes it, held
otherwise, audited either way.

Unlike an admin's auto-promoting retraining run (feedback.services.promotion.promote_if_better),
a round's candidate need not be strictly better on a large test split of the labels: labels
arrive in small batches, and the gate already forbids a loss beyond its tolerance on every suite.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.utils import timezone

from feedback.models import LabelledExample, ModelVersion, RunKind, RunStatus, TrainingRun
from moderation.services.audit import audit_record


def last_round(scope: str) -> TrainingRun | None:
    """The latest round of the model `scope` names that ended: with a candidate (promoted or
    held) or failed. A round that fails waits for as many new labels as any other before it is
    tried again; every round's report holds the newest label it saw from its start."""
    return (
        TrainingRun.objects.filter(
            kind=RunKind.ADAPTATION, scope=scope, status__in=[RunStatus.SUCCEEDED, RunStatus.FAILED]
        )
        .order_by("-created_at")
        .first()
    )


def labels_since_last_round(scope: str, categories: Sequence[str]) -> int:
    """Labels of `categories` written since the newest label the last round of `scope` saw."""
    last = last_round(scope)
    seen = int(((last.report or {}).get("adaptation") or {}).get("last_example_id") or 0) if last else 0
    return LabelledExample.objects.filter(pk__gt=seen, category__in=categories).count()


def adaptation_decide(*, run: TrainingRun, bundle: str = "text") -> dict[str, Any]:
    """Promote the run's candidate when the gate passes, hold it otherwise; audit either.
    `bundle`: the model the round adapts ("text" or "abuse"), whose suites the summary lists."""
    from feedback.services.gate import gate_reasons
    from feedback.services.promotion import promote_run

    reasons = gate_reasons(run.report or {})
    production = ModelVersion.objects.filter(name=bundle, is_production=True).first()
    decision: dict[str, Any] = {"promoted": False, "reasons": reasons, "checked_at": timezone.now().isoformat()}
    if not reasons:
        try:
            versions = promote_run(run=run, user=None, automatic=True, note="automatic adaptation: the gate passed")
            decision.update(promoted=True, versions={mv.name: mv.version for mv in versions})
        except Exception as exc:  # a failed load leaves production as it was (promotion's undo)
            decision["reasons"] = [str(getattr(exc, "message", exc))]
    report = dict(run.report or {})
    report["auto_promotion"] = decision
    TrainingRun.objects.filter(pk=run.pk).update(report=report)
    suites = suite_f1(report, bundle=bundle)
    audit_record(
        actor=None,
        action="model.adaptation.promoted" if decision["promoted"] else "model.adaptation.held",
        target=run,
        before={"bundle": bundle, "version": production.version if production else None},
        after={"versions": decision.get("versions"), "reasons": decision["reasons"], "suites": suites},
    )
    return {
        "status": "promoted" if decision["promoted"] else "held",
        "run": run.pk,
        "reasons": decision["reasons"],
        "versions": decision.get("versions", {}),
        "suites": suites,
    }


def suite_f1(report: Mapping[str, Any], *, bundle: str = "text") -> dict[str, dict[str, float | None]]:
    """Per suite of `bundle`: the candidate's and production's F1 (None where a suite was skipped)."""
    out: dict[str, dict[str, float | None]] = {}
    for entry in (report.get("suites") or {}).get(bundle, []):
        out[entry["name"]] = {
            "candidate": (entry.get("candidate") or {}).get("f1"),
            "production": (entry.get("production") or {}).get("f1"),
        }
    return out
