"""Adaptation: the text model learns from reviewer labels as they arrive, between full retrainings.

One round refits the two parts of the served text model that are cheap to fit on a CPU and are
read from files beside the tokenizer:

- the lexical half of the text score (modelops.text.baseline: hashed TF-IDF + logistic
  regression, blended with the transformer as served) on the bootstrap SMS train split (the
  replay: what the first model learned) plus every effective spam-model label of the train
  split (cumulative), weighted by origin as a retraining run is (FEEDBACK_REPLAY_WEIGHTS);
- how much a label weighs against the replay and the blend weight of the two halves, chosen on
  the labels' validation split against the served transformer's scores, so that where the
  transformer does not know a platform's content the labels can carry the score
  (modelops.text.adapt says how and why);
- the familiarity reference (modelops.text.familiarity) on the SMS train split plus every
  effective labelled text, so content becomes familiar once moderators have labelled it.

The transformer's ONNX file, tokenizer and the abuse model are the served version's, copied
unchanged (serving.json with the chosen blend weight), except in a round that fine-tunes: once
ADAPTATION_FINETUNE_MIN_LABELS labels arrived since the last round that fine-tuned or tried to,
the transformer is fine-tuned on the labels plus the replay as a retraining run does, averaged
with its start as far as the SMS validation split needs (modelops.text.interpolate) and
exported to int8 (finetune_due, _finetuned_candidate; docs/design.md says why). A fine-tuned
candidate the gate would hold is built and judged again without the fine-tune
(adaptation_execute).

The round is a TrainingRun of kind "adaptation" on a dataset snapshot of the labels: the
candidate is scored beside production on every evaluation suite, the promotion gate decides
(feedback.services.gate), a passing candidate is promoted by
feedback.services.promotion.promote_run as any other run, and every outcome is audited.
Unlike an admin's auto-promoting retraining run, the test split of the labels does not have to
be large or strictly better: labels arrive in small batches and their test split is one of the
suites the gate compares, so a candidate may not lose more than the gate tolerates anywhere.

The same task then runs the abuse model's round when its labels are due
(feedback.services.abuse_adaptation), under the same lock; its summary is the "abuse" entry of
the round's.

Triggers (settings ADAPTATION_*): a label committed bumps a counter in the cache (a hint, no
query on the moderator's request); once it reaches the smaller of ADAPTATION_MIN_NEW_LABELS and
ABUSE_ADAPTATION_MIN_NEW_LABELS the task is enqueued, and beat enqueues it every
ADAPTATION_SCHEDULE_S. Each round counts its own model's new labels in the database again before
it runs, from the last round of that model that ended (promoted, held or failed), and a model no
round can run for (none served) counts none. `manage.py adapt_text_model --force` runs both now
(the abuse model's only with ABUSE_ADAPTATION_ENABLED on and a new removal for abuse or hate).

Coordination, all in this module:
- LOCK_KEY (cache.add with a TTL of the task's hard time limit): one round at a time across
  workers; an adaptation run still "running" when the lock is free was left by a killed worker
  and is marked failed;
- a retraining run queued or running: the round is skipped (the retraining learns from the
  same labels); an adaptation run running makes training_run_start refuse, as any run does;
- COUNTER_KEY / ENQUEUED_KEY: the label hint and a marker so one batch enqueues one task; the
  round resets both from the database when it ends.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.utils import timezone

from feedback.models import (
    DatasetOrigin,
    DatasetVersion,
    LabelledExample,
    RunKind,
    RunStatus,
    TrainingData,
    TrainingRun,
    TrainingScope,
)
from feedback.services.abuse_adaptation import (
    abuse_adaptation_enabled,
    abuse_adaptation_round_locked,
    abuse_adaptation_switched_on,
    abuse_min_new_labels,
    abuse_new_label_count,
)
from feedback.services.adaptation_decision import adaptation_decide, labels_since_last_round
from feedback.services.training import run_progress
from moderation.categories import SPAM_MODEL_CATEGORIES

if TYPE_CHECKING:
    from modelops.text.adapt import AdaptedText, Example
    from modelops.text.interpolate import Retained

logger = logging.getLogger(__name__)

ADAPTATION_SOFT_LIMIT_S = 20 * 60
ADAPTATION_HARD_LIMIT_S = 25 * 60
# The abuse model's round (a linear model's fit and its suites: seconds to a minute) starts after
# the text round only with at least this much of the soft limit left.
ABUSE_ROUND_RESERVE_S = 180
# A round without the fine-tune is built again only when its first build's time, times the
# margin, plus the slack (the gate and the promotion after it), fits before the soft limit.
RETRY_TIME_MARGIN = 1.5
RETRY_SLACK_S = 60.0
# Files of the served version folders that are Triton's or publish's, not the model's.
_NOT_MODEL_FILES = frozenset({"model.py", "PUBLISHED.json"})
# What a round's report records of a fine-tune beside "finetuned" (and its summary repeats).
# finetune_held is set by adaptation_execute on the report itself; the others travel in serving.json.
FINETUNE_OUTCOME_KEYS = ("export", "finetune_error", "finetune_forgot", "finetune_held", "interpolation")


def _key(name: str) -> str:
    # Keyed by database: a test database and a development one may share a Redis.
    return f"feedback:adaptation:{connection.settings_dict['NAME']}:{name}"


LOCK_KEY, COUNTER_KEY, ENQUEUED_KEY = "lock", "new_labels", "enqueued"


@dataclass(frozen=True)
class AdaptationConfig:
    enabled: bool
    min_new_labels: int

    @classmethod
    def from_settings(cls) -> AdaptationConfig:
        return cls(
            enabled=bool(getattr(settings, "ADAPTATION_ENABLED", True)),
            min_new_labels=max(1, int(getattr(settings, "ADAPTATION_MIN_NEW_LABELS", 200))),
        )


# --- counting and triggering ------------------------------------------------------------------


def new_label_count() -> int:
    """Spam-model labels written since the labels the last text round saw."""
    return labels_since_last_round(TrainingScope.TEXT, SPAM_MODEL_CATEGORIES)


def on_label_recorded(sender: Any, **kwargs: Any) -> None:
    """decision_recorded receiver: after the decision commits, count it towards the next round."""
    if AdaptationConfig.from_settings().enabled:
        transaction.on_commit(label_hint)


def label_hint() -> None:
    """One label more in the cache counter; enqueue the task once it reaches the threshold. The
    moderator's request must not fail on the cache: errors are logged."""
    try:
        cache.add(_key(COUNTER_KEY), 0, timeout=None)
        count = int(cache.incr(_key(COUNTER_KEY)))
        if count < _hint_threshold():
            return
    except Exception:
        logger.exception("feedback.adaptation_hint_failed")
        return
    _enqueue_round()


def _enqueue_round() -> None:
    """Enqueue the task unless this batch of labels already did (ENQUEUED_KEY)."""
    try:
        if not cache.add(_key(ENQUEUED_KEY), 1, timeout=ADAPTATION_HARD_LIMIT_S):
            return
    except Exception:
        logger.exception("feedback.adaptation_hint_failed")
        return
    try:
        adapt_text_model_task.delay(trigger="labels")
    except Exception:  # broker down: the next label or the schedule tries again
        cache.delete(_key(ENQUEUED_KEY))
        logger.exception("feedback.adaptation_enqueue_failed")


def _hint_threshold() -> int:
    """The counter counts every label (settings only: no query on the moderator's request); each
    round counts its own model's labels in the database before it runs."""
    needed = AdaptationConfig.from_settings().min_new_labels
    return min(needed, abuse_min_new_labels()) if abuse_adaptation_switched_on() else needed


def _newest_label_id() -> int:
    return LabelledExample.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def _reset_hint(*, labels_after: int | None = None) -> None:
    """The counter starts again where the model nearest its next round stands: it reaches the
    threshold after as many labels as that model still needs.

    `labels_after`: the newest label when the round began. Labels committed during the round
    found the task already enqueued and enqueued nothing; if they make a model due, the task is
    enqueued again now, or they would wait for the next label or the schedule. Only labels that
    arrived during the round re-enqueue, so a round that is due but skipped (a retraining runs)
    does not enqueue itself in a loop, and none does while a retraining (which learns them) is
    queued or running."""
    from feedback.services.promotion import served_text_dir

    try:
        needs = []
        if served_text_dir() is not None:
            needs.append((AdaptationConfig.from_settings().min_new_labels, new_label_count()))
        if abuse_adaptation_enabled():
            needs.append((abuse_min_new_labels(), abuse_new_label_count()))
        if not needs:  # no model served: nothing to count towards until one is
            cache.set(_key(COUNTER_KEY), 0, timeout=None)
            cache.delete(_key(ENQUEUED_KEY))
            return
        still_needed = min(max(0, needed - arrived) for needed, arrived in needs)
        # Below zero where the model nearest its round needs more than the threshold (the other
        # model's is smaller but it cannot run): the counter reaches the threshold when it is due.
        cache.set(_key(COUNTER_KEY), _hint_threshold() - still_needed, timeout=None)
        cache.delete(_key(ENQUEUED_KEY))
        rearm = (
            still_needed == 0
            and labels_after is not None
            and _newest_label_id() > labels_after
            and not _retraining_busy()
        )
    except Exception:
        logger.exception("feedback.adaptation_hint_failed")
        return
    if rearm:
        _enqueue_round()


def _retraining_busy() -> bool:
    return TrainingRun.objects.filter(
        kind=RunKind.RETRAINING, status__in=[RunStatus.QUEUED, RunStatus.RUNNING]
    ).exists()


# --- the round ------------------------------------------------------------------------------


def adaptation_round(*, trigger: str, force: bool = False, time_limit_s: float | None = None) -> dict[str, Any]:
    """Run one round now, in this process, if it is due (or `force`); return a summary.
    `time_limit_s`: the soft time limit the round runs under (the task's; None: none, as for
    the management command), which decides whether a held fine-tune's round is built again.

    Outcomes: "promoted" (the new version is served when this returns), "held" (the gate
    held it), "skipped" (why in "reason"), "failed" (the error in "reason")."""
    config = AdaptationConfig.from_settings()
    if not force and not config.enabled:
        return {"status": "skipped", "reason": "ADAPTATION_ENABLED is off", "trigger": trigger}
    token = uuid.uuid4().hex
    if not cache.add(_key(LOCK_KEY), token, timeout=ADAPTATION_HARD_LIMIT_S):
        return {"status": "skipped", "reason": "another adaptation round is running", "trigger": trigger}
    started, labels_before = time.monotonic(), None
    summary: dict[str, Any] = {"status": "failed"}
    try:
        labels_before = _newest_label_id()
        summary = _round_locked(trigger=trigger, force=force, config=config, time_limit_s=time_limit_s)
        summary["abuse"] = _abuse_round(trigger=trigger, force=force, started=started, time_limit_s=time_limit_s)
        return summary
    finally:
        if cache.get(_key(LOCK_KEY)) == token:
            cache.delete(_key(LOCK_KEY))
        # A round that failed is not followed at once by another: the next label or the
        # schedule starts it.
        failed = "failed" in (summary.get("status"), (summary.get("abuse") or {}).get("status"))
        _reset_hint(labels_after=None if failed else labels_before)


def _abuse_round(*, trigger: str, force: bool, started: float, time_limit_s: float | None) -> dict[str, Any]:
    """The abuse model's round after the text model's, under the same lock: its summary, or why
    not. It never fails the text round's summary: its own failure is reported in it."""
    if time_limit_s is not None and time.monotonic() - started > time_limit_s - ABUSE_ROUND_RESERVE_S:
        return {
            "status": "skipped",
            "reason": "too little of the task's time limit left; the next task runs it",
            "trigger": trigger,
        }
    try:
        return abuse_adaptation_round_locked(trigger=trigger, force=force)
    except Exception as exc:
        logger.exception("feedback.abuse_adaptation_failed")
        return {"status": "failed", "reason": f"{type(exc).__name__}: {exc}", "trigger": trigger}


def _skip_reason(*, trigger: str, force: bool, config: AdaptationConfig, new_labels: int) -> str | None:
    from feedback.services.promotion import served_text_dir

    if _retraining_busy():
        return "a retraining run is queued or running"
    if served_text_dir() is None:
        return "no text model is served"
    if force:
        return None
    if trigger == "schedule":  # the schedule's round learns whatever arrived since the last one
        return "no new labels" if new_labels == 0 else None
    if new_labels < config.min_new_labels:
        return f"{new_labels} new labels, fewer than ADAPTATION_MIN_NEW_LABELS ({config.min_new_labels})"
    return None


def _round_locked(*, trigger: str, force: bool, config: AdaptationConfig, time_limit_s: float | None) -> dict[str, Any]:
    from feedback.services.datasets import dataset_snapshot_if_changed

    # Holding the lock, no round is running: one still marked so was left by a killed worker.
    TrainingRun.objects.filter(kind=RunKind.ADAPTATION, status=RunStatus.RUNNING).update(
        status=RunStatus.FAILED, error="the worker running it was lost", finished_at=timezone.now()
    )
    new_labels = new_label_count()
    reason = _skip_reason(trigger=trigger, force=force, config=config, new_labels=new_labels)
    if reason is not None:
        return {"status": "skipped", "reason": reason, "trigger": trigger, "new_labels": new_labels}
    started = time.monotonic()
    # The latest spam-model snapshot (an abuse model's snapshot labels abuse removals "spam").
    dataset = dataset_snapshot_if_changed(name="adaptation") or (
        DatasetVersion.objects.filter(origin=DatasetOrigin.SNAPSHOT)
        .exclude(manifest__has_key="model")
        .order_by("-version")
        .first()
    )
    if dataset is None:
        return {"status": "skipped", "reason": "no labelled examples yet", "trigger": trigger, "new_labels": 0}
    last_example_id = (
        LabelledExample.objects.filter(category__in=SPAM_MODEL_CATEGORIES).order_by("-pk").values_list("pk", flat=True)
    ).first() or 0
    finetune = finetune_due()
    with transaction.atomic():
        # The same check an admin's run start makes, under the same row locks, so a retraining
        # started meanwhile and this round never both run (and both promote).
        busy = TrainingRun.objects.select_for_update().filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING])
        if busy.exists():
            return {"status": "skipped", "reason": "a retraining run is queued or running", "trigger": trigger}
        run = TrainingRun.objects.create(
            dataset=dataset,
            scope=TrainingScope.TEXT,
            kind=RunKind.ADAPTATION,
            training_data=TrainingData.CUMULATIVE,
            auto_promote=True,
            status=RunStatus.RUNNING,
            started_at=timezone.now(),
            # Written before the work: a round that fails or is killed after its fine-tune
            # started (``finetune_started``) still counts as a fine-tune tried
            # (last_finetuned_example_id), so the next round does not start the same fine-tune
            # again and run into the same limit.
            report={"adaptation": {"last_example_id": last_example_id}},
        )
    run_progress(run.pk, 0.01, f"adaptation ({trigger}): {new_labels} new labels, dataset v{dataset.version}")
    try:
        deadline = None if time_limit_s is None else started + time_limit_s
        outcome = adaptation_execute(run=run, finetune=finetune, deadline=deadline)
    except Exception as exc:
        logger.exception("feedback.adaptation_failed", extra={"run_id": run.pk})
        TrainingRun.objects.filter(pk=run.pk).update(
            status=RunStatus.FAILED, error=f"{type(exc).__name__}: {exc}", finished_at=timezone.now()
        )
        return {"status": "failed", "reason": str(exc), "run": run.pk, "trigger": trigger}
    outcome["report"]["adaptation"] = {
        **outcome["report"].get("adaptation", {}),
        "trigger": trigger,
        "new_labels": new_labels,
        "last_example_id": last_example_id,
    }
    TrainingRun.objects.filter(pk=run.pk).update(
        status=RunStatus.SUCCEEDED,
        progress=1.0,
        progress_message="evaluated",
        finished_at=timezone.now(),
        candidate_artifacts=outcome["artifacts"],
        candidate_metrics=outcome["candidate"],
        production_metrics=outcome["production"],
        report=outcome["report"],
    )
    run.refresh_from_db()
    summary = adaptation_decide(run=run)
    summary.update(
        {
            "trigger": trigger,
            "new_labels": new_labels,
            "dataset": dataset.version,
            "labels": dataset.example_count,
            "seconds": {**outcome["report"]["adaptation"]["seconds"], "total": round(time.monotonic() - started, 1)},
            # Whether the transformer was fine-tuned, and why not where one was due: an operator
            # reading the command's output or the run's report sees a dropped fine-tune's F1s.
            "finetune": {
                k: v for k, v in outcome["report"]["adaptation"].items() if k in ("finetuned", *FINETUNE_OUTCOME_KEYS)
            },
            # The blend weight, label multiplier and C the round chose (modelops.text.adapt).
            "blend": (outcome["report"]["adaptation"].get("blend") or {}).get("chosen"),
        }
    )
    run.refresh_from_db(fields=["report"])  # the decision added auto_promotion
    report = dict(run.report or {})
    report["adaptation"]["seconds"] = summary["seconds"]
    TrainingRun.objects.filter(pk=run.pk).update(report=report)
    logger.info("feedback.adaptation_done", extra={"run_id": run.pk, "status": summary["status"]})
    return summary


# --- fitting and evaluating ------------------------------------------------------------------


def _link_or_copy(src: Path, dst: Path) -> None:
    """The transformer file is tens of MB and only ever read: a hard link where possible. Every
    other file is copied, as the round rewrites some of them in place (a hard link would write
    through into the served version)."""
    if dst.exists():
        dst.unlink()
    if src.suffix == ".onnx":
        try:
            os.link(src, dst)
            return
        except OSError:
            pass
    shutil.copy2(src, dst)


def candidate_from_served(*, clf_dir: Path, tok_dir: Path, out_dir: Path) -> dict[str, Any]:
    """The served text model's files in one artifact dir (the layout publish expects); returns
    the classifier's serving.json (the one publish reads), for the caller to amend and write."""
    import json

    out_dir.mkdir(parents=True, exist_ok=True)
    for folder in (tok_dir, clf_dir):
        for item in folder.iterdir():
            if item.is_file() and item.name not in _NOT_MODEL_FILES:
                _link_or_copy(item, out_dir / item.name)
    serving: dict[str, Any] = json.loads((clf_dir / "serving.json").read_text())
    # Publish stores the served file as model.onnx whichever file it was (int8 included), while
    # serving.json keeps the artifact's name for it: the candidate names the file it holds.
    if not (out_dir / str(serving.get("model_file", "model.onnx"))).is_file():
        serving["model_file"] = "model.onnx"
    (out_dir / "serving.json").write_text(json.dumps(serving, indent=2, sort_keys=True) + "\n")
    return serving


def _refit_cascade(out_dir: Path, validation_texts: list[str]) -> float:
    """Fit the cascade's bounds for the candidate in out_dir; seconds taken. The bounds hold for
    the lexical half they were fitted with: a refitted one gets its own, on the same validation
    texts, or a skipped text could be decided differently from what the full blend decides."""
    from modelops.text.cascade import fit_for_model, write_bounds

    tick = time.monotonic()
    write_bounds(out_dir, fit_for_model(out_dir, validation_texts))
    return round(time.monotonic() - tick, 1)


def _sms_rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """The whole bootstrap SMS train and validation splits as rows, and the test split's texts
    (the familiarity thresholds' held-out set, as when the bootstrap reference was fitted)."""
    from feedback.services.replay import bootstrap_replay_rows
    from modelops.text.data import load_sms_splits

    rows = bootstrap_replay_rows(limit=10**9)
    return (
        [r for r in rows if r["split"] == "train"],
        [r for r in rows if r["split"] == "validation"],
        list(load_sms_splits().test.texts),
    )


def last_finetuned_example_id() -> int:
    """The newest label the last fine-tuning round saw (0: no round fine-tuned yet)."""
    for status, report in (
        TrainingRun.objects.filter(
            kind=RunKind.ADAPTATION, scope=TrainingScope.TEXT, status__in=[RunStatus.SUCCEEDED, RunStatus.FAILED]
        )
        .order_by("-created_at")
        .values_list("status", "report")
    ):
        adaptation = (report or {}).get("adaptation") or {}
        # A failed attempt counts too: it is retried after as many labels again, not every round.
        # So does a round that failed, or was killed, after its fine-tune started (a time limit).
        tried = ("finetuned", "finetune_error", "finetune_forgot", "finetune_held")
        if any(adaptation.get(k) for k in tried) or (status == RunStatus.FAILED and adaptation.get("finetune_started")):
            return int(adaptation.get("last_example_id") or 0)
    return 0


def finetune_due() -> bool:
    """Whether this round fine-tunes the transformer: ADAPTATION_FINETUNE_MIN_LABELS spam-model
    labels (0: never) arrived since the last round that did or tried to, promoted or held (a
    held fine-tune is not retried on every round; the next one waits for as many labels again).
    Between those rounds the lexical half carries what the labels teach, in seconds."""
    needed = int(getattr(settings, "ADAPTATION_FINETUNE_MIN_LABELS", 0))
    if needed <= 0:
        return False
    since = LabelledExample.objects.filter(pk__gt=last_finetuned_example_id(), category__in=SPAM_MODEL_CATEGORIES)
    return since.count() >= needed


def _finetuned_candidate(
    *,
    run: TrainingRun,
    data: Any,
    out_dir: Path,
    thresholds: Mapping[str, Any],
    sms_test: Any,
    sms_validation: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """Fine-tune the transformer on the round's rows (the labels plus the replay sample a
    retraining run takes) from the bootstrap checkpoint, as a retraining run does but with the
    round's budget, then export it to int8 with the bootstrap's parity and F1 checks, the two lowest
    layers' feed-forward outputs in float (fp32 when that int8 loses more than the export allows).
    Returns the serving.json to amend."""
    import json

    from feedback.services.text import train_text_candidate

    keep = [i for i, r in enumerate(data.train) if r.get("text")]
    _, metrics = train_text_candidate(
        run_id=run.pk,
        train=[data.train[i] for i in keep],
        validation=[r for r in data.validation if r.get("text")],
        # The candidate's own report (calibration, test metrics): the SMS test split; the gate
        # scores it on every suite afterwards.
        test=[
            {"text": t, "label": "spam" if y else "ham"} for t, y in zip(sms_test.texts, sms_test.labels, strict=True)
        ],
        out_dir=out_dir,
        thresholds=thresholds,
        progress=lambda fraction, message: run_progress(run.pk, 0.05 + 0.3 * fraction, message),
        train_weights=class_balanced_weights([data.train[i] for i in keep], [data.train_weights[i] for i in keep]),
        epochs=int(getattr(settings, "ADAPTATION_FINETUNE_EPOCHS", 2)),
        # A few hundred labels move the top of the model only: less of the SMS suite forgotten,
        # fewer legitimate posts of the new kind pushed to the remove threshold.
        freeze_layers=int(getattr(settings, "ADAPTATION_FINETUNE_FREEZE_LAYERS", -2)),
        time_budget_s=float(getattr(settings, "ADAPTATION_FINETUNE_BUDGET_S", 600.0)),
        # Averaged with its start so that its text score keeps the served one's F1 on the SMS
        # validation split within the budget: less than the gate's point, leaving the rest to
        # the int8 export, which finetune_forgetting checks afterwards.
        retained=served_retention(sms_validation),
    )
    export: dict[str, Any] = {}
    try:
        export_finetuned(out_dir, [str(r["text"]) for r in data.train if r.get("text")], sms_test)
    except SoftTimeLimitExceeded:
        raise
    except Exception as exc:  # the fp32 file train_text_candidate wrote is served instead
        logger.exception("feedback.adaptation_int8_export_failed", extra={"run_id": run.pk})
        export["error"] = f"{type(exc).__name__}: {exc}"
    # The round judges and refits the transformer beside the served lexical half: the one
    # train_text_candidate fits on the same texts, unweighted and untuned, cost the SMS
    # validation split about a point on its own, which held fine-tunes that had not forgotten.
    keep_served_lexical(out_dir=out_dir)
    serving: dict[str, Any] = json.loads((out_dir / "serving.json").read_text())
    export["serves"] = serving.get("model_file")
    serving["export"] = export
    if "interpolation" in metrics:
        serving["interpolation"] = metrics["interpolation"]
    return serving


def export_finetuned(out_dir: Path, train_texts: Sequence[str], sms_test: Any) -> Any:
    """Export a round's fine-tuned checkpoint in out_dir (modelops.text.export.run_export),
    calibrated on 200 of its training texts; returns the ExportReport."""
    import random

    from modelops.text.export import LOW_LAYERS_LIN2_FLOAT, run_export

    return run_export(
        out_dir,
        calibration_texts=random.Random(0).sample(list(train_texts), min(200, len(train_texts))),
        eval_texts=list(sms_test.texts),
        eval_labels=list(sms_test.labels),
        max_length=int(getattr(settings, "TEXT_MAX_LENGTH", 128)),
        latency_runs=10,
        measure_optimizer=False,
        threads=1,
        latency_threads=(1,),
        # Full INT8 of a fine-tuned model nearly doubled the violations its text score would
        # auto-approve, even where it kept the SMS test F1 (modelops.text.export, LOW_LAYERS_LIN2_FLOAT).
        recipe=LOW_LAYERS_LIN2_FLOAT,
    )


def _assemble_candidate(
    *,
    run: TrainingRun,
    data: Any,
    served: tuple[Path, Path],
    out_dir: Path,
    thresholds: Mapping[str, Any],
    sms_validation: Sequence[Mapping[str, Any]],
    finetune: bool,
) -> tuple[dict[str, Any], bool, dict[str, Any]]:
    """The candidate's transformer in out_dir: fine-tuned when ``finetune`` (finetune_due), else
    the served version's files. Returns its serving.json, whether it was fine-tuned, and what
    the report records of the attempt (the export's outcome, a fine-tune's error)."""
    serving, finetuned = _candidate_files(
        run=run,
        data=data,
        served=served,
        out_dir=out_dir,
        thresholds=thresholds,
        sms_validation=sms_validation,
        finetune=finetune,
    )
    outcome: dict[str, Any] = {k: serving.pop(k) for k in FINETUNE_OUTCOME_KEYS if k in serving}
    return serving, finetuned, outcome


def _candidate_files(
    *,
    run: TrainingRun,
    data: Any,
    served: tuple[Path, Path],
    out_dir: Path,
    thresholds: Mapping[str, Any],
    sms_validation: Sequence[Mapping[str, Any]],
    finetune: bool,
) -> tuple[dict[str, Any], bool]:
    from modelops.text.data import load_sms_splits

    if finetune:
        _mark_finetune_started(run)
        sms_test = load_sms_splits().test
        try:
            serving = _finetuned_candidate(
                run=run,
                data=data,
                out_dir=out_dir,
                thresholds=thresholds,
                sms_test=sms_test,
                sms_validation=sms_validation,
            )
            forgot = finetune_forgetting(out_dir, sms_validation)
            if forgot is None:
                return serving, True
            # The gate would hold the whole round on the SMS suite, and what the lexical half
            # learns from the same labels with the served transformer would be lost with it.
            logger.warning("feedback.adaptation_finetune_forgot", extra={"run_id": run.pk, **forgot})
            shutil.rmtree(out_dir, ignore_errors=True)
            tried = serving.get("interpolation")
            serving = candidate_from_served(clf_dir=served[0], tok_dir=served[1], out_dir=out_dir)
            serving["finetune_forgot"] = forgot
            if tried is not None:
                serving["interpolation"] = tried
            return serving, False
        except SoftTimeLimitExceeded:
            raise
        except Exception as exc:
            # The round goes on with the served transformer: a fine-tune that keeps failing
            # (a missing checkpoint, a full disk) must not stop the lexical refit with it.
            logger.exception("feedback.adaptation_finetune_failed", extra={"run_id": run.pk})
            shutil.rmtree(out_dir, ignore_errors=True)
            serving = candidate_from_served(clf_dir=served[0], tok_dir=served[1], out_dir=out_dir)
            serving["finetune_error"] = f"{type(exc).__name__}: {exc}"
            return serving, False
    return candidate_from_served(clf_dir=served[0], tok_dir=served[1], out_dir=out_dir), False


def _mark_finetune_started(run: TrainingRun) -> None:
    """Note on the run, before the fine-tune, that it started: should the round fail or be
    killed from here on, it still counts as a fine-tune tried (last_finetuned_example_id)."""
    report = dict(TrainingRun.objects.values_list("report", flat=True).get(pk=run.pk) or {})
    report["adaptation"] = {**(report.get("adaptation") or {}), "finetune_started": True}
    TrainingRun.objects.filter(pk=run.pk).update(report=report)


def served_sms_f1(sms_val: Sequence[Mapping[str, Any]]) -> float | None:
    """F1 at 0.5 of the served text score on the SMS validation split (None: nothing served)."""
    from feedback.services.text import production_text_predictor
    from modelops.text.metrics import spam_metrics

    with production_text_predictor() as served:
        if served is None:
            return None
        return float(spam_metrics([_violation(r) for r in sms_val], served(sms_val))["f1"])


def served_retention(sms_val: Sequence[Mapping[str, Any]]) -> Retained:
    """What a fine-tune must keep: the served text score's F1 on the SMS validation split, within
    ADAPTATION_FINETUNE_FORGET_BUDGET, the fine-tune's probabilities judged blended with the
    served lexical half at the served weight (the candidate keeps both: keep_served_lexical)."""
    import numpy as np

    from feedback.services.text import production_text_classifier
    from modelops.text.baseline import blend
    from modelops.text.interpolate import Retained
    from modelops.text.metrics import spam_metrics

    texts = [str(r["text"]) for r in sms_val]
    labels = [_violation(r) for r in sms_val]
    budget = float(getattr(settings, "ADAPTATION_FINETUNE_FORGET_BUDGET", 0.005))
    with production_text_classifier() as served:
        if served is None:
            return Retained(texts=texts, labels=labels, budget=budget)
        reference = float(spam_metrics(labels, served.predict_proba(texts))["f1"])
        if served.lexical is None or served.lexical_weight <= 0:
            return Retained(texts=texts, labels=labels, budget=budget, reference_f1=reference)
        lexical = np.asarray(served.lexical.predict_proba(texts)[:, 1], dtype=np.float64)
        weight = served.lexical_weight
    return Retained(
        texts=texts,
        labels=labels,
        budget=budget,
        reference_f1=reference,
        rescore=lambda probs: blend(probs, lexical, weight),
    )


def keep_served_lexical(*, out_dir: Path) -> None:
    """Put the served lexical half and blend weight in a fine-tuned candidate's out_dir (its
    lexical file and serving.json), in place of the ones train_text_candidate fitted; a served
    model without a lexical half leaves the candidate without one, as served_retention judged it."""
    import json

    from feedback.services.text import production_text_classifier
    from modelops.text.baseline import LEXICAL_FILE

    with production_text_classifier() as served:
        if served is None:
            return
        if served.lexical is None:
            (out_dir / LEXICAL_FILE).unlink(missing_ok=True)
            return
        shutil.copyfile(served.model_dir / LEXICAL_FILE, out_dir / LEXICAL_FILE)
        weight = served.lexical_weight
    serving_file = out_dir / "serving.json"
    serving = json.loads(serving_file.read_text())
    serving["lexical_weight"] = weight
    serving_file.write_text(json.dumps(serving, indent=2, sort_keys=True) + "\n")


def finetune_forgetting(candidate_dir: Path, sms_val: Sequence[Mapping[str, Any]]) -> dict[str, float] | None:
    """What a fine-tuned candidate forgot: the F1 at 0.5 of its text score (its exported
    transformer with the served lexical half at the served weight: keep_served_lexical) and of
    the served one on the SMS validation split, when the candidate's is lower by more than the
    promotion gate's PROMOTION_GATE_MAX_F1_DROP; None
    when it is not. The validation split, not the test split the gate scores, so the gate's
    suite stays unseen by every choice a round makes."""
    from modelops.text.inference import OnnxTextClassifier
    from modelops.text.metrics import spam_metrics

    labels = [_violation(r) for r in sms_val]
    production = served_sms_f1(sms_val)
    if production is None:
        return None
    candidate = spam_metrics(
        labels, OnnxTextClassifier(candidate_dir).predict_proba([str(r["text"]) for r in sms_val])
    )["f1"]
    tolerance = float(getattr(settings, "PROMOTION_GATE_MAX_F1_DROP", 0.01))
    if candidate >= production - tolerance:
        return None
    return {"sms_validation_f1": round(candidate, 4), "served_sms_validation_f1": round(production, 4)}


def _write_serving(
    out_dir: Path, serving: dict[str, Any], *, lexical_weight: float, reason: str, adapted_from: dict[str, str]
) -> None:
    import json

    serving.update({"lexical_weight": lexical_weight, "reason": reason, "adapted_from": adapted_from})
    (out_dir / "serving.json").write_text(json.dumps(serving, indent=2, sort_keys=True) + "\n")


MAX_CLASS_FACTOR = 5.0


def class_balanced_weights(rows: Sequence[Mapping[str, Any]], weights: Sequence[float]) -> list[float]:
    """The rows' weights with the labels (rows not replayed) reweighed so that violations and
    legitimate labels each carry half of the labels' total weight; replayed rows keep theirs.

    Moderators label what the queue holds, which is rarely half and half (the Teach order leans
    on what the models are torn about, a campaign fills a queue with one class). Measured on 500
    insults labels of which 400 were violations (benchmarks/RESULTS.md, "Learning curve"), the
    fine-tune with the labels as they came called 12 % of legitimate comments spam at the remove
    threshold and lost 5 F1 points on the SMS suite; with the classes balanced, 3 % and 3.5.
    A class's weight is raised at most MAX_CLASS_FACTOR times: one legitimate label among two
    hundred violations would otherwise carry three quarters of its batch's loss every epoch."""
    from feedback.services.replay import TrainingRows

    labelled = [i for i, r in enumerate(rows) if TrainingRows.is_label(r)]
    total = {0: 0.0, 1: 0.0}
    for i in labelled:
        total[_violation(rows[i])] += weights[i]
    if not labelled or min(total.values()) <= 0:
        return list(weights)  # one class only: nothing to balance against
    whole = total[0] + total[1]
    out = list(weights)
    for i in labelled:
        out[i] = weights[i] * min(whole / (2 * total[_violation(rows[i])]), MAX_CLASS_FACTOR)
    return out


def _violation(row: Mapping[str, Any]) -> int:
    return 1 if row["label"] == "spam" else 0


def _fit_lexical_half(
    out_dir: Path,
    train: Sequence[Example],
    *,
    replay_validation: Sequence[tuple[str, int]],
    labels: Sequence[tuple[str, int]],
) -> AdaptedText:
    """Refit the lexical half in out_dir (a copy of the served model) and choose its blend
    weight: the served model (its transformer, lexical half and weight) scores the validation
    texts once and both are chosen against it (modelops.text.adapt)."""
    from modelops.text.adapt import fit_adapted_text
    from modelops.text.baseline import DEFAULT_LEXICAL_WEIGHT, save_lexical
    from modelops.text.inference import OnnxTextClassifier

    served_model = OnnxTextClassifier(out_dir)
    adapted = fit_adapted_text(
        train=train,
        replay_validation=replay_validation,
        label_validation=labels,
        transformer=served_model.transformer_rows,
        served_lexical=served_model.lexical,
        # A served weight of 0 (the transformer alone) is a weight, not "unset".
        served_weight=served_model.lexical_weight if served_model.lexical is not None else DEFAULT_LEXICAL_WEIGHT,
    )
    save_lexical(adapted.lexical, out_dir)
    return adapted


def adaptation_execute(*, run: TrainingRun, finetune: bool, deadline: float | None = None) -> dict[str, Any]:
    """The round's candidate (adaptation_candidate), fine-tuned when `finetune`. When the gate
    would hold a fine-tuned candidate, the round builds and judges the candidate again without
    the fine-tune: the gate would otherwise hold what the lexical half and the familiarity
    reference learnt from the same labels with it. The held fine-tune's suites and reasons go
    into the report (``finetune_held``), and it counts as tried (last_finetuned_example_id).

    `deadline` (time.monotonic()): when the round would run past it, the task's soft time limit,
    were it to build the candidate again (the first build's time without the fine-tune, with a
    margin), the fine-tuned candidate stays the round's and the gate holds it; the next round,
    without a fine-tune, takes what the labels teach."""
    from feedback.services.datasets import artifacts_dir
    from feedback.services.gate import gate_reasons

    result = adaptation_candidate(run=run, finetune=finetune)
    adaptation = result["report"]["adaptation"]
    reasons = gate_reasons(result["report"]) if adaptation["finetuned"] else []
    if not reasons:
        return result
    held = {
        "reasons": reasons,
        "suite_f1": result["candidate"]["text"].get("suite_f1"),
        "blend": adaptation["blend"].get("chosen"),
        **{k: adaptation[k] for k in ("export", "interpolation") if k in adaptation},
    }
    logger.warning("feedback.adaptation_finetune_held", extra={"run_id": run.pk, "reasons": reasons})
    rebuild_s = sum(v for k, v in adaptation["seconds"].items() if k != "finetune")
    needed_s = RETRY_TIME_MARGIN * rebuild_s + RETRY_SLACK_S
    if deadline is not None and time.monotonic() + needed_s > deadline:
        left_s = max(0.0, deadline - time.monotonic())
        held["retry"] = f"skipped: about {needed_s:.0f} s needed, {left_s:.0f} s left before the time limit"
        adaptation["finetune_held"] = held
        return result
    shutil.rmtree(artifacts_dir() / result["artifacts"]["text"], ignore_errors=True)
    retry = adaptation_candidate(run=run, finetune=False)
    retry["report"]["adaptation"]["finetune_held"] = held
    retry["report"]["adaptation"]["seconds"]["held_finetune_round"] = round(sum(adaptation["seconds"].values()), 1)
    return retry


def adaptation_candidate(*, run: TrainingRun, finetune: bool) -> dict[str, Any]:
    """Fine-tune the transformer when asked, fit the candidate's lexical half, blend weight
    and familiarity reference, score candidate and production on every suite, and return what a
    retraining run stores."""
    from feedback.services.datasets import artifacts_dir
    from feedback.services.evaluation import current_thresholds
    from feedback.services.gate import evaluate_suites, gate_evaluate
    from feedback.services.promotion import served_text_dir
    from feedback.services.replay import replay_weights, training_rows
    from feedback.services.suites import held_out_texts, normalized_text, suite_bootstrap_ensure, suite_for_dataset_test
    from feedback.services.text import candidate_text_predictor, production_text_predictor
    from modelops.text.adapt import Example
    from modelops.text.familiarity import fit_familiarity, save_familiarity

    seconds: dict[str, float] = {}
    tick = time.monotonic()
    served = served_text_dir()
    if served is None:
        raise RuntimeError("no text model is served")
    thresholds = current_thresholds()
    suite_bootstrap_ensure()
    for dataset in DatasetVersion.objects.filter(training_runs__isnull=False).distinct().order_by("version"):
        suite_for_dataset_test(dataset=dataset)
    weights = replay_weights()
    held_out = held_out_texts()
    data = training_rows(run=run)  # the labels: this dataset, earlier ones, every other label
    label_train = [(r, w) for r, w in zip(data.train, data.train_weights, strict=True) if data.is_label(r)]
    label_val = [r for r in data.validation if data.is_label(r)]
    sms_train, sms_val, sms_test_texts = _sms_rows()
    sms_train = [r for r in sms_train if normalized_text(r["text"]) not in held_out]
    train = [
        Example(str(r["text"]), _violation(r), weights["bootstrap"]) for r in sms_train if weights["bootstrap"] > 0
    ] + [Example(str(r["text"]), _violation(r), w, is_label=True) for r, w in label_train if r.get("text")]
    label_validation = [(str(r["text"]), _violation(r)) for r in label_val if r.get("text")]
    validation = [str(r["text"]) for r in sms_val] + [t for t, _ in label_validation]
    seconds["data"] = round(time.monotonic() - tick, 1)
    run_progress(
        run.pk, 0.1, f"lexical: fitting on {len(train)} texts ({len(label_train)} labels, {len(sms_train)} SMS replay)"
    )

    tick = time.monotonic()
    out_dir = artifacts_dir() / "runs" / str(run.pk) / "text"
    serving, finetuned, outcome = _assemble_candidate(
        run=run,
        data=data,
        served=served,
        out_dir=out_dir,
        thresholds=thresholds,
        sms_validation=sms_val,
        finetune=finetune,
    )
    if finetuned:
        seconds["finetune"] = round(time.monotonic() - tick, 1)
        tick = time.monotonic()
    adapted = _fit_lexical_half(
        out_dir, train, replay_validation=[(str(r["text"]), _violation(r)) for r in sms_val], labels=label_validation
    )
    lexical = adapted.lexical
    seconds["lexical"] = round(time.monotonic() - tick, 1)

    tick = time.monotonic()
    # The run's dataset snapshot, every split (familiarity is not a classifier, and a labelled
    # text is familiar content): the snapshot is what erasure tracks, so a version whose
    # reference holds an erased author's text is listed for retraining like any other.
    from feedback.services.datasets import dataset_load

    labelled = [
        str(r["text"])
        for r in dataset_load(dataset=run.dataset)
        if r.get("text") and normalized_text(str(r["text"])) not in held_out
    ]
    familiarity = fit_familiarity([r["text"] for r in sms_train] + labelled, sms_test_texts)
    save_familiarity(familiarity, out_dir)
    seconds["familiarity"] = round(time.monotonic() - tick, 1)

    _write_serving(
        out_dir,
        serving,
        lexical_weight=adapted.lexical_weight,
        reason=f"adaptation run {run.pk}: "
        + ("transformer fine-tuned, " if finetuned else "transformer unchanged, ")
        + "lexical half, blend weight and familiarity refitted",
        adapted_from={"text_classifier": served[0].name, "tokenizer": served[1].name},
    )
    if settings.TEXT_CASCADE:
        seconds["cascade"] = _refit_cascade(out_dir, validation)

    run_progress(run.pk, 0.4, "scoring candidate and production on every evaluation suite")
    tick = time.monotonic()
    with production_text_predictor() as prod_predict:
        suites = {
            "text": evaluate_suites(
                bundle="text",
                candidate=candidate_text_predictor(out_dir),
                production=prod_predict,
                thresholds=thresholds,
            )
        }
    seconds["evaluation"] = round(time.monotonic() - tick, 1)
    f1 = {e["name"]: (e.get("candidate") or {}).get("f1") for e in suites["text"]}
    sms = next((e for e in suites["text"] if e.get("kind") == "bootstrap" and e.get("candidate")), None)
    candidate_metrics = dict(sms["candidate"]) if sms else {}
    candidate_metrics["lexical"] = {
        "model": lexical.describe(),
        "validation_f1": lexical.validation["f1"],
        "lexical_weight": adapted.lexical_weight,
        "label_multiplier": adapted.label_multiplier,
    }
    candidate_metrics["familiarity"] = familiarity.describe()
    candidate_metrics["suite_f1"] = f1
    report = {
        "dataset": {"version": run.dataset.version, "content_sha256": run.dataset.content_sha256},
        "thresholds": thresholds,
        "training_data": {
            **data.summary(),
            "lexical_train": len(train),
            "lexical_validation": len(validation),
            "sms_replay": len(sms_train),
            "labels_train": len(label_train),
            "familiarity_reference": familiarity.reference_size,
            "familiarity_labelled_texts": len(labelled),
        },
        "suites": suites,
        "gate": gate_evaluate(suites),
        "adaptation": {
            "seconds": seconds,
            "finetuned": finetuned,
            **outcome,
            "transformer": "fine-tuned on the labels and the replay"
            if finetuned
            else "unchanged (served version's ONNX file)",
            "blend": adapted.report,
        },
    }
    return {
        "artifacts": {"text": str(out_dir.relative_to(artifacts_dir()))},
        "candidate": {"text": candidate_metrics},
        "production": {"text": dict(sms["production"] or {}) if sms else None},
        "report": report,
    }


# --- the task --------------------------------------------------------------------------------


@shared_task(
    name="feedback.adapt_text_model",
    soft_time_limit=ADAPTATION_SOFT_LIMIT_S,
    time_limit=ADAPTATION_HARD_LIMIT_S,
)
def adapt_text_model_task(trigger: str = "schedule") -> dict[str, Any]:
    """One adaptation round if due (adaptation_round). Not acks_late: a round lost with its
    worker is marked failed by the next one, which starts from the labels again."""
    return adaptation_round(trigger=trigger, time_limit_s=ADAPTATION_SOFT_LIMIT_S)
