"""Celery tasks of the feedback loop. Routed to the "training" queue (CELERY_TASK_ROUTES
"feedback.*"), so a retraining run never sits in front of scoring tasks; run one worker for it:
    celery -A config worker -Q training --concurrency=1
Idempotent: a finished run is left as it is, so acks_late redelivery after a killed worker just
restarts an unfinished run."""

from __future__ import annotations

from celery import shared_task

TRAINING_SOFT_LIMIT_S = 40 * 60  # the text fine-tune is budgeted at 15 minutes on 2 cores
TRAINING_HARD_LIMIT_S = 45 * 60


@shared_task(
    name="feedback.run_training",
    acks_late=True,
    soft_time_limit=TRAINING_SOFT_LIMIT_S,
    time_limit=TRAINING_HARD_LIMIT_S,
)
def training_run_task(run_id: int) -> None:
    # Imported when a run starts: FeedbackConfig.ready imports this module in every process
    # (web included), and the training services pull in scikit-learn and XGBoost.
    from feedback.services.training import training_run_execute

    training_run_execute(run_id=run_id)


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
