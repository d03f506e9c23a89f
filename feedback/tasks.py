"""Celery tasks of the feedback loop. Routed to the "training" queue (CELERY_TASK_ROUTES
"feedback.*"), so a retraining run never sits in front of scoring tasks; run one worker for it:
    celery -A config worker -Q training --concurrency=1
Idempotent: a finished run is left as it is, so acks_late redelivery after a killed worker just
restarts an unfinished run. The training task is defined beside the service that publishes it
(feedback.services.training.training_run_task) and exported here, as is the adaptation task
(feedback.services.adaptation.adapt_text_model_task)."""

from __future__ import annotations

from celery import shared_task

from feedback.services.adaptation import adapt_text_model_task
from feedback.services.training import TRAINING_HARD_LIMIT_S, TRAINING_SOFT_LIMIT_S, training_run_task

__all__ = [
    "TRAINING_HARD_LIMIT_S",
    "TRAINING_SOFT_LIMIT_S",
    "adapt_text_model_task",
    "prune_model_storage_task",
    "snapshot_dataset_task",
    "training_run_task",
]


@shared_task(name="feedback.snapshot_dataset", acks_late=True, soft_time_limit=600, time_limit=660)
def snapshot_dataset_task(name: str = "scheduled snapshot") -> int | None:
    """For a beat schedule (e.g. weekly): snapshot the labelled examples if any changed since
    the last version. Returns the new version number, or None when nothing changed."""
    from feedback.services.datasets import dataset_snapshot_if_changed

    dataset = dataset_snapshot_if_changed(name=name)
    return dataset.version if dataset is not None else None


@shared_task(name="feedback.apply_retention", acks_late=True, soft_time_limit=1800, time_limit=1860)
def apply_retention_task() -> dict[str, dict[str, int]]:
    """Hourly (CELERY_BEAT_SCHEDULE): labelled examples past their source's retention."""
    from django.utils import timezone

    from feedback.services.retention import retention_apply

    return retention_apply(now=timezone.now())


@shared_task(name="feedback.prune_model_storage", acks_late=True, soft_time_limit=600, time_limit=660)
def prune_model_storage_task() -> dict[str, object]:
    """Every MODEL_STORAGE_PRUNE_S (CELERY_BEAT_SCHEDULE): old run candidates, artifact versions
    and Triton folders. On the training queue: with the one training worker of concurrency 1 the
    deployment runs, never beside a training run or an adaptation round. A promotion (web) writes
    folders too young to prune (docs/deploy.md, "Model storage", says what a race with one does)."""
    from feedback.services.model_storage import prune_model_storage

    plan = prune_model_storage()
    return {"removed": len(plan.removed), "failed": len(plan.failed), "kept": plan.kept, "freed_mib": plan.freed_mib}
