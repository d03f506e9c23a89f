"""Adaptation of the abuse model: moderators' abuse and hate removals teach it as they arrive.

The text model's rounds (feedback.services.adaptation) learn from the spam model's labels. A
removal for abuse/harassment or hate, and the approvals beside it, are the abuse model's labels
(moderation.categories.ABUSE_MODEL_CATEGORIES); without a round of its own they would wait for an
admin's abuse retraining run. A round here is that run, started by the labels instead of an
admin: a dataset snapshot for the abuse model, a cumulative run (the labels plus the insults
replay, feedback.services.abuse), the abuse model's own suites and the promotion gate, promotion
only where the gate passes, audited as the text model's rounds are.

The abuse model is a linear model over hashed n-grams: a round takes under a minute on a CPU
worker, so it runs in the text model's task, after the text round and under the same lock, so the
two never train at once and one schedule and one label counter serve both (adaptation_round).

Due when ABUSE_ADAPTATION_MIN_NEW_LABELS removals for abuse or hate arrived since the last abuse
round, promoted, held or failed (on the schedule: at least one). Approvals are in every snapshot
but start no round: most of them are about spam, and the text model's rounds learn from those.
Without a served abuse model no round runs (it would have nothing to compare with), and the
labels do not count towards one. A forced round (`adapt_text_model --force`) still obeys
ABUSE_ADAPTATION_ENABLED.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from feedback.models import (
    DatasetVersion,
    LabelledExample,
    ModelBundle,
    RunKind,
    RunStatus,
    TrainingData,
    TrainingRun,
    TrainingScope,
)
from feedback.services.adaptation_decision import adaptation_decide, labels_since_last_round
from moderation.categories import ABUSE, ABUSE_MODEL_CATEGORIES, NONE

logger = logging.getLogger(__name__)

# The abuse model's positives: what starts a round.
ABUSE_REMOVAL_CATEGORIES = tuple(c for c in ABUSE_MODEL_CATEGORIES if c != NONE)


def abuse_adaptation_switched_on() -> bool:
    """ABUSE_ADAPTATION_ENABLED alone: what even a forced round obeys."""
    return bool(getattr(settings, "ABUSE_ADAPTATION_ENABLED", True))


def abuse_adaptation_enabled() -> bool:
    """Whether labels start abuse rounds: adaptation on, the abuse model's rounds on, and an
    abuse model served for a round to start from (without one, the labels would count towards
    a round that can never run and every later label would enqueue the task again)."""
    from feedback.services.abuse import served_abuse_dir

    return (
        bool(getattr(settings, "ADAPTATION_ENABLED", True))
        and abuse_adaptation_switched_on()
        and served_abuse_dir() is not None
    )


def abuse_min_new_labels() -> int:
    return max(1, int(getattr(settings, "ABUSE_ADAPTATION_MIN_NEW_LABELS", 50)))


def abuse_new_label_count() -> int:
    """Removals for abuse or hate written since the labels the last abuse round saw."""
    return labels_since_last_round(TrainingScope.ABUSE, ABUSE_REMOVAL_CATEGORIES)


def _skip_reason(*, trigger: str, force: bool, new_removals: int) -> str | None:
    from feedback.services.abuse import served_abuse_dir

    if not abuse_adaptation_switched_on():
        return "ABUSE_ADAPTATION_ENABLED is off"
    if not force and not bool(getattr(settings, "ADAPTATION_ENABLED", True)):
        return "ADAPTATION_ENABLED is off"
    if TrainingRun.objects.filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).exists():
        return "a retraining run is queued or running"
    if served_abuse_dir() is None:
        return "no abuse model is served"
    if new_removals == 0:
        return "no new abuse or hate removals"
    if force or trigger == "schedule":
        return None
    if new_removals < abuse_min_new_labels():
        return (
            f"{new_removals} new abuse or hate removals, fewer than ABUSE_ADAPTATION_MIN_NEW_LABELS "
            f"({abuse_min_new_labels()})"
        )
    return None


def abuse_adaptation_round_locked(*, trigger: str, force: bool = False) -> dict[str, Any]:
    """One abuse round if due, in this process; the caller holds the adaptation lock
    (feedback.services.adaptation.adaptation_round). Returns a summary: "promoted", "held",
    "skipped" (why in "reason") or "failed" (the run's error in "reason")."""
    from feedback.services.datasets import dataset_snapshot
    from feedback.services.training import training_run_execute

    new_removals = abuse_new_label_count()
    reason = _skip_reason(trigger=trigger, force=force, new_removals=new_removals)
    if reason is not None:
        return {"status": "skipped", "reason": reason, "trigger": trigger, "new_labels": new_removals}
    last_example_id = (
        LabelledExample.objects.filter(category__in=ABUSE_MODEL_CATEGORIES).order_by("-pk").values_list("pk", flat=True)
    ).first() or 0
    # After the busy check: a retraining started since then is caught again under the row locks
    # below, leaving at most this snapshot unused.
    dataset: DatasetVersion = dataset_snapshot(created_by=None, model=ABUSE, name="abuse adaptation")
    with transaction.atomic():
        # The check an admin's run start makes, under the same row locks (adaptation_round's text
        # round does the same), so a retraining started meanwhile and this round never both run.
        busy = TrainingRun.objects.select_for_update().filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING])
        if busy.exists():
            return {"status": "skipped", "reason": "a retraining run is queued or running", "trigger": trigger}
        run = TrainingRun.objects.create(
            dataset=dataset,
            scope=TrainingScope.ABUSE,
            kind=RunKind.ADAPTATION,
            training_data=TrainingData.CUMULATIVE,
            auto_promote=False,  # adaptation_decide promotes, on the gate alone
            # Running from the start, as the text round's run: a worker lost before the run
            # starts leaves a running adaptation run, which the next round marks failed (a
            # queued one would block every run).
            status=RunStatus.RUNNING,
            started_at=timezone.now(),
            # Kept by a failed run (training_run_execute rewrites the report only on success),
            # so a failing round is tried again only after as many new removals.
            report={"adaptation": {"trigger": trigger, "new_labels": new_removals, "last_example_id": last_example_id}},
        )
    run = training_run_execute(run_id=run.pk)
    if run.status != RunStatus.SUCCEEDED:
        logger.error("feedback.abuse_adaptation_failed", extra={"run_id": run.pk})
        return {"status": "failed", "reason": run.error, "run": run.pk, "trigger": trigger}
    report = dict(run.report or {})
    report["adaptation"] = {"trigger": trigger, "new_labels": new_removals, "last_example_id": last_example_id}
    TrainingRun.objects.filter(pk=run.pk).update(report=report)
    run.refresh_from_db()
    summary = adaptation_decide(run=run, bundle=ModelBundle.ABUSE)
    summary.update({"trigger": trigger, "new_labels": new_removals, "dataset": dataset.version})
    logger.info("feedback.abuse_adaptation_done", extra={"run_id": run.pk, "status": summary["status"]})
    return summary
