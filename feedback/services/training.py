"""Retraining runs: train candidates on a dataset version's train/validation split, evaluate the
candidate AND the current production models on the same held-out test split, store the report.

A run never touches what is served. Publishing happens only in feedback.services.promotion:
by an admin, or automatically when the run asked for it and the guarded-metrics rule passes.
A failing run ends in status "failed" with the reason in `error`; production is untouched.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from celery import shared_task
from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Concat
from django.utils import timezone

from core.errors import ApplicationError, Conflict
from core.metrics import TRAINING_RUNS
from feedback.models import DatasetVersion, RunStatus, TrainingData, TrainingRun, TrainingScope
from feedback.permissions import check_ml_admin
from feedback.services.datasets import artifacts_dir, dataset_load
from scoring.services.policy import strongest_sub_score

# The training stack (scikit-learn, SciPy, XGBoost: feedback.services.evaluation and tabular) is
# imported by the functions that train: every worker imports this module at start (feedback.tasks
# registers the training task defined below), and only a run needs it.
if TYPE_CHECKING:
    from feedback.services.tabular import TabularModels

logger = logging.getLogger(__name__)

SUB_SCORE_KEYS = ("text", "preview", "link", "behaviour")  # LabelledExample.sub_scores
MIN_TEST_ROWS = 10  # below this, metrics are noise: the run fails and says so


class TrainingFailed(Exception):
    """A run cannot produce a trustworthy candidate; the message is shown to the admin."""


# --- starting -----------------------------------------------------------------------------


def training_run_start(
    *,
    dataset: DatasetVersion,
    scope: str,
    started_by: Any,
    auto_promote: bool = False,
    training_data: str = TrainingData.CUMULATIVE,
) -> TrainingRun:
    """Create a queued run and enqueue it on the "training" queue once the row is committed."""
    check_ml_admin(started_by)
    if scope not in TrainingScope.values:
        raise ApplicationError(f"Unknown scope {scope!r}.", code="invalid_scope", fields={"scope": ["unknown"]})
    if training_data not in TrainingData.values:
        raise ApplicationError(
            f"Unknown training data {training_data!r}.",
            code="invalid_training_data",
            fields={"training_data": ["unknown"]},
        )
    from feedback.services.datasets import dataset_model
    from moderation.categories import ABUSE, SPAM

    wanted = ABUSE if scope == TrainingScope.ABUSE else SPAM
    if dataset_model(dataset) != wanted:
        raise ApplicationError(
            f"Dataset v{dataset.version} was built for the {dataset_model(dataset)} model; this scope trains the "
            f"{wanted} model: snapshot a dataset for it first.",
            code="dataset_model_mismatch",
            fields={"dataset": ["built for another model"]},
        )
    with transaction.atomic():
        busy = TrainingRun.objects.select_for_update().filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING])
        if busy.exists():
            raise Conflict("Another training run is queued or running; wait for it to finish.", code="run_busy")
        run = TrainingRun.objects.create(
            dataset=dataset,
            scope=scope,
            started_by=started_by,
            auto_promote=auto_promote,
            training_data=training_data,
        )
        transaction.on_commit(lambda: _enqueue(run.pk))
    return run


def _enqueue(run_id: int) -> None:
    try:
        result = training_run_task.delay(run_id)
    except Exception as exc:  # broker down: say so on the run instead of failing the request
        logger.exception("feedback.training_enqueue_failed", extra={"run_id": run_id})
        _finish(run_id, status=RunStatus.FAILED, error=f"Could not enqueue the run: {exc}")
        return
    TrainingRun.objects.filter(pk=run_id).update(task_id=result.id or "")


# --- progress -----------------------------------------------------------------------------


def run_progress(run_id: int, fraction: float, message: str) -> None:
    """Progress and a log line, written with UPDATE so it never clobbers other fields."""
    stamp = timezone.now().strftime("%H:%M:%S")
    TrainingRun.objects.filter(pk=run_id).update(
        progress=max(0.0, min(1.0, fraction)),
        progress_message=message[:255],
        log=Concat(F("log"), Value(f"{stamp} {message}\n")),
    )


def _finish(run_id: int, *, status: str, error: str = "", **fields: Any) -> None:
    TrainingRun.objects.filter(pk=run_id).update(status=status, error=error, finished_at=timezone.now(), **fields)
    TRAINING_RUNS.labels(status).inc()


# --- executing ----------------------------------------------------------------------------


def training_run_execute(*, run_id: int) -> TrainingRun:
    """The task body. Idempotent: a finished run is returned as is; a re-delivered running run
    (worker killed) starts again from scratch, writing to the same candidate directory."""
    run = TrainingRun.objects.select_related("dataset").get(pk=run_id)
    if run.is_finished:
        return run
    TrainingRun.objects.filter(pk=run_id).update(
        status=RunStatus.RUNNING, started_at=timezone.now(), progress=0.0, error=""
    )
    run_progress(run_id, 0.01, f"run started: scope={run.scope}, dataset v{run.dataset.version}")
    try:
        outcome = _train_and_evaluate(run)
    except Exception as exc:
        reason = str(exc) if isinstance(exc, TrainingFailed | ApplicationError) else f"{type(exc).__name__}: {exc}"
        logger.exception("feedback.training_failed", extra={"run_id": run_id})
        TrainingRun.objects.filter(pk=run_id).update(
            log=Concat(F("log"), Value("".join(traceback.format_exception(exc))[-4000:]))
        )
        _finish(run_id, status=RunStatus.FAILED, error=reason)
        return TrainingRun.objects.get(pk=run_id)
    _finish(
        run_id,
        status=RunStatus.SUCCEEDED,
        progress=1.0,
        progress_message="done",
        candidate_artifacts=outcome["artifacts"],
        candidate_metrics=outcome["candidate"],
        production_metrics=outcome["production"],
        report=outcome["report"],
    )
    run_progress(run_id, 1.0, "evaluation stored")
    run = TrainingRun.objects.select_related("dataset").get(pk=run_id)
    if run.auto_promote:
        from feedback.services.promotion import promote_if_better

        promote_if_better(run=run)
    return TrainingRun.objects.get(pk=run_id)


def _check_test(rows: Sequence[Mapping[str, Any]], what: str) -> None:
    from feedback.services.tabular import labels_of

    y = labels_of(rows)
    if len(rows) < MIN_TEST_ROWS or y.sum() == 0 or y.sum() == len(y):
        raise TrainingFailed(
            f"The held-out test split has {len(rows)} {what} ({int(y.sum())} spam): at least {MIN_TEST_ROWS} with "
            "both spam and ham are needed to compare candidate and production. Label more posts (from more "
            "authors) and snapshot a new dataset."
        )


def _ensure_suites(run: TrainingRun) -> None:
    """The bootstrap suites of the run's model (SMS; for an abuse run insults and the benign
    SMS suite) and the test split of every dataset version trained on so far (this run's
    included), created on first use."""
    from feedback.services.suites import abuse_suites_ensure, suite_bootstrap_ensure, suite_for_dataset_test

    suite_bootstrap_ensure()
    if run.scope == TrainingScope.ABUSE:
        abuse_suites_ensure()
    for dataset in DatasetVersion.objects.filter(training_runs__isnull=False).distinct().order_by("version"):
        suite_for_dataset_test(dataset=dataset)


def _train_and_evaluate(run: TrainingRun) -> dict[str, Any]:
    from feedback.services.evaluation import current_thresholds
    from feedback.services.gate import evaluate_suites, gate_evaluate
    from feedback.services.replay import training_rows
    from feedback.services.tabular import predict_final, train_tabular, usable, write_json

    thresholds = current_thresholds()
    _check_dataset_model(run)
    _ensure_suites(run)
    test_rows = [r for r in dataset_load(dataset=run.dataset) if r["split"] == "test"]
    data = training_rows(run=run)
    run_progress(run.pk, 0.03, f"training data ({data.mode}): {data.summary()['rows']}")
    run_dir = artifacts_dir() / "runs" / str(run.pk)
    candidate: dict[str, Any] = {}
    production: dict[str, Any] = {}
    artifacts: dict[str, str] = {}
    suites: dict[str, Any] = {}
    report: dict[str, Any] = {
        "dataset": {"version": run.dataset.version, "content_sha256": run.dataset.content_sha256},
        "thresholds": thresholds,
        "split_sizes": {"train": len(data.train), "validation": len(data.validation), "test": len(test_rows)},
        "training_data": data.summary(),
    }
    if run.scope in (TrainingScope.TABULAR, TrainingScope.ALL):
        keep = [i for i, r in enumerate(data.train) if usable(r)]
        tab_train = [data.train[i] for i in keep]
        tab_weights = [data.train_weights[i] for i in keep]
        tab_val = [r for r in data.validation if usable(r)]
        tab_test = [r for r in test_rows if usable(r)]
        report["tabular_split_sizes"] = {"train": len(tab_train), "validation": len(tab_val), "test": len(tab_test)}
        _check_test(tab_test, "rows with frozen features")
        run_progress(run.pk, 0.05, f"tabular: {len(tab_train)} train / {len(tab_test)} test rows with features")
        models = train_tabular(
            tab_train, tab_val, progress=lambda f, m: run_progress(run.pk, f * 0.4, m), weights=tab_weights
        )
        out_dir = artifacts_dir() / "tabular" / f"run-{run.pk}"
        models.save(out_dir)
        artifacts["tabular"] = str(out_dir.relative_to(artifacts_dir()))
        run_progress(run.pk, 0.45, "evaluating candidate and production on the test split and every suite")
        candidate["tabular"] = _evaluate_tabular(models, tab_test, thresholds)
        candidate["tabular"]["calibration"] = models.calibration
        prod_models = load_production_tabular()
        production["tabular"] = (
            _evaluate_tabular(prod_models, tab_test, thresholds) if prod_models is not None else None
        )
        suites["tabular"] = evaluate_suites(
            bundle="tabular",
            candidate=lambda rows: predict_final(models, rows)["final"],
            production=(lambda rows: predict_final(prod_models, rows)["final"]) if prod_models is not None else None,
            thresholds=thresholds,
        )
        write_json(out_dir / "metrics.json", {"candidate": candidate["tabular"], "production": production["tabular"]})
    if run.scope in (TrainingScope.TEXT, TrainingScope.ALL):
        from feedback.services.text import (
            candidate_text_predictor,
            evaluate_production_text,
            production_text_predictor,
            train_text_candidate,
        )

        keep = [i for i, r in enumerate(data.train) if r.get("text")]
        text_test = [r for r in test_rows if r.get("text")]
        _check_test(text_test, "rows with text")
        text_dir, cand_metrics = train_text_candidate(
            run_id=run.pk,
            train=[data.train[i] for i in keep],
            validation=[r for r in data.validation if r.get("text")],
            test=text_test,
            out_dir=run_dir / "text",
            thresholds=thresholds,
            progress=lambda f, m: run_progress(run.pk, 0.5 + f * 0.35, m),
            train_weights=[data.train_weights[i] for i in keep],
        )
        artifacts["text"] = str(text_dir.relative_to(artifacts_dir()))
        candidate["text"] = cand_metrics
        production["text"] = evaluate_production_text(test=text_test, thresholds=thresholds)
        run_progress(run.pk, 0.88, "text: scoring candidate and production on every evaluation suite")
        with production_text_predictor() as prod_predict:
            suites["text"] = evaluate_suites(
                bundle="text",
                candidate=candidate_text_predictor(text_dir),
                production=prod_predict,
                thresholds=thresholds,
            )
    if run.scope == TrainingScope.ABUSE:
        from feedback.services.abuse import abuse_run_train_and_evaluate

        outcome = abuse_run_train_and_evaluate(
            run_id=run.pk,
            dataset_version=run.dataset.version,
            data=data,
            test_rows=test_rows,
            out_dir=run_dir / "abuse",
            progress=lambda f, m: run_progress(run.pk, 0.05 + f * 0.85, m),
        )
        artifacts["abuse"] = str(outcome.model_dir.relative_to(artifacts_dir()))
        candidate["abuse"], production["abuse"], suites["abuse"] = outcome.candidate, outcome.production, outcome.suites
        report["abuse_thresholds"] = outcome.thresholds
        report["split_sizes"]["test"] = outcome.test_rows
    report["guarded"] = guarded_summary(candidate, production)
    report["suites"] = suites
    report["gate"] = gate_evaluate(suites)
    return {"artifacts": artifacts, "candidate": candidate, "production": production, "report": report}


def _check_dataset_model(run: TrainingRun) -> None:
    """An abuse run trains on a dataset built for the abuse model, a spam run on a spam one: the
    label "spam" of a row means a removal in that model's categories only."""
    from feedback.services.datasets import dataset_model
    from moderation.categories import ABUSE, SPAM

    wanted = ABUSE if run.scope == TrainingScope.ABUSE else SPAM
    found = dataset_model(run.dataset)
    if found != wanted:
        raise TrainingFailed(
            f"Dataset v{run.dataset.version} was built for the {found} model; a {run.get_scope_display()} run needs "
            f"a {wanted} dataset (snapshot one for that model on the datasets page)."
        )


def _evaluate_tabular(
    models: TabularModels, rows: Sequence[Mapping[str, Any]], thresholds: Mapping[str, float]
) -> dict[str, Any]:
    from feedback.services.evaluation import classification_metrics
    from feedback.services.tabular import frozen_text_prob, labels_of, predict_final

    y = labels_of(rows)
    pred = predict_final(models, rows)
    kw: dict[str, Any] = {"remove_threshold": thresholds["remove"], "approve_threshold": thresholds["approve"]}
    # The final score is judged by the whole policy, as live scoring would act on it.
    policy_kw: dict[str, Any] = {
        **kw,
        "escalate_threshold": thresholds.get("escalate", 1.0),
        "report_counts": _report_counts(rows),
        "strongest_sub_scores": _strongest(
            rows, text=frozen_text_prob(rows), link=pred["link"], behaviour=pred["behaviour"]
        ),
    }
    sources = sorted({str(r.get("source")) for r in rows})
    by_source = {}
    if len(sources) > 1:
        for source in sources:
            mask = np.asarray([str(r.get("source")) == source for r in rows])
            masked = {k: v[mask] if isinstance(v, np.ndarray) else v for k, v in policy_kw.items()}
            by_source[source] = classification_metrics(y[mask], pred["final"][mask], **masked)
    return {
        "final": classification_metrics(y, pred["final"], **policy_kw),
        "link": classification_metrics(y, pred["link"], **kw),
        "behaviour": classification_metrics(y, pred["behaviour"], **kw),
        "by_source": by_source,
        "frozen_production_score": _frozen_metrics(rows, y, policy_kw),
    }


def _report_counts(rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
    from feedback.services.tabular import flat_features

    return np.asarray([flat_features(r.get("features") or {}).get("report_count", 0.0) for r in rows], dtype=np.float64)


def _strongest(
    rows: Sequence[Mapping[str, Any]],
    *,
    text: np.ndarray | None = None,
    link: np.ndarray | None = None,
    behaviour: np.ndarray | None = None,
) -> np.ndarray:
    """Per row, the strongest sub-score the policy's escalation sees: the given predictions,
    the frozen sub-scores for the rest (preview is never re-predicted)."""
    given = {"text": text, "link": link, "behaviour": behaviour}
    out = np.zeros(len(rows), dtype=np.float64)
    for i, row in enumerate(rows):
        frozen = row.get("sub_scores") or {}
        values = []
        for key in SUB_SCORE_KEYS:
            predicted = given.get(key)
            values.append(float(predicted[i]) if predicted is not None else frozen.get(key))
        out[i] = strongest_sub_score(values)
    return out


def _frozen_metrics(
    rows: Sequence[Mapping[str, Any]], y: np.ndarray, policy_kw: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The scores the rows actually got when they were scored (a sanity line for the report)."""
    from feedback.services.evaluation import classification_metrics

    scores = [r.get("final_score") for r in rows]
    if any(s is None for s in scores):
        return None
    kw = {**policy_kw, "strongest_sub_scores": _strongest(rows)}
    return classification_metrics(y, [float(s) for s in scores if s is not None], **kw)


def load_production_tabular() -> TabularModels | None:
    from feedback.services.promotion import served_tabular_files
    from feedback.services.tabular import TabularModels

    files = served_tabular_files()
    return TabularModels.load(files) if files is not None else None


# --- comparison ---------------------------------------------------------------------------

# (path into the metrics dict, True when higher is better)
GUARDED_METRICS: tuple[tuple[str, bool], ...] = (
    ("pr_auc", True),
    ("f1", True),
    ("at_remove.precision", True),
    ("at_remove.fpr", False),
)


def _dig(metrics: Mapping[str, Any] | None, path: str) -> float | None:
    node: Any = metrics
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return float(node) if isinstance(node, int | float) else None


def _guarded_value(metrics: Mapping[str, Any] | None, path: str) -> float | None:
    """A model that auto-removes nothing has no precision at the remove threshold; it made no
    false removal either, so for the guard it counts as precision 1.0."""
    value = _dig(metrics, path)
    if value is None and path == "at_remove.precision" and _dig(metrics, "at_remove.flagged") == 0:
        return 1.0
    return value


def _headline(metrics: Mapping[str, Any], bundle: str) -> Mapping[str, Any] | None:
    data = metrics.get(bundle)
    if not isinstance(data, Mapping):
        return None
    return data.get("final") if bundle == "tabular" else data


def guarded_summary(candidate: Mapping[str, Any], production: Mapping[str, Any]) -> dict[str, Any]:
    """Per bundle and guarded metric: candidate, production, and whether the candidate is at
    least as good. `better_on_all` is the auto-promotion rule (see promotion.promote_if_better)."""
    out: dict[str, Any] = {}
    for bundle in candidate:
        cand = _headline(candidate, bundle)
        prod = _headline(production, bundle)
        rows: list[dict[str, Any]] = []
        strictly = False
        for path, higher in GUARDED_METRICS:
            c, p = _guarded_value(cand, path), _guarded_value(prod, path)
            ok = None if c is None or p is None else (c >= p if higher else c <= p)
            if c is not None and p is not None and (c > p if higher else c < p):
                strictly = True
            rows.append({"metric": path, "candidate": c, "production": p, "higher_is_better": higher, "ok": ok})
        out[bundle] = {
            "metrics": rows,
            "has_production": prod is not None,
            "better_on_all": prod is not None and all(r["ok"] is True for r in rows) and strictly,
        }
    return out


def candidate_dir(run: TrainingRun, bundle: str) -> Path:
    rel = run.candidate_artifacts.get(bundle)
    if not rel:
        raise ApplicationError(f"Run #{run.pk} has no {bundle} candidate.", code="no_candidate")
    return artifacts_dir() / rel


# --- the task ------------------------------------------------------------------------------

TRAINING_SOFT_LIMIT_S = 40 * 60  # the text fine-tune is budgeted at 15 minutes on 2 cores
TRAINING_HARD_LIMIT_S = 45 * 60


@shared_task(
    name="feedback.run_training",
    acks_late=True,
    soft_time_limit=TRAINING_SOFT_LIMIT_S,
    time_limit=TRAINING_HARD_LIMIT_S,
)
def training_run_task(run_id: int) -> None:
    """Execute a queued run (training_run_execute). Defined beside training_run_start, which
    publishes it, so the publish is a typed reference; feedback.tasks exports it."""
    training_run_execute(run_id=run_id)
