"""Celery tasks of the feedback loop. Routed to the "training" queue (CELERY_TASK_ROUTES
"feedback.*"), so a retraining run never sits in front of scoring tasks; run one worker for it:
    celery -A config worker -Q training --concurrency=1
Idempotent: a finished run is left as it is, so acks_late redelivery after a killed worker just
restarts an unfinished run."""

from __future__ import annotations

from celery import shared_task

from feedback.services.training import training_run_execute

TRAINING_SOFT_LIMIT_S = 40 * 60  # the text fine-tune is budgeted at 15 minutes on 2 cores
TRAINING_HARD_LIMIT_S = 45 * 60


@shared_task(
    name="feedback.run_training",
    acks_late=True,
    soft_time_limit=TRAINING_SOFT_LIMIT_S,
    time_limit=TRAINING_HARD_LIMIT_S,
)
def training_run_task(run_id: int) -> None:
    training_run_execute(run_id=run_id)
