"""Reads shared by the feedback views, services and commands."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from feedback.models import (
    DatasetVersion,
    EvaluationSuite,
    ExampleOrigin,
    LabelledExample,
    ModelBundle,
    ModelVersion,
    RunStatus,
    TrainingRun,
    TrainingScope,
)
from moderation.categories import SPAM_MODEL_CATEGORIES
from moderation.models import Decision

# The conflict rule, in one place (also written into every dataset manifest).
CONFLICT_RULE = (
    "One effective label per post (source + post external id). Examples whose decision was undone "
    "are dropped. Among the rest, a decision by an admin overrides any non-admin decision; within "
    "the same rank the latest decision wins (decided_at, then example id). Imported rows have no "
    "post and each counts on its own."
)


def _post_key(example: LabelledExample) -> tuple[str, str]:
    if example.origin == ExampleOrigin.IMPORT or not example.post_external_id:
        return ("#example", str(example.pk))
    return (example.source_slug, example.post_external_id)


def _rank(example: LabelledExample) -> tuple[bool, datetime, int]:
    return (example.decided_by_admin, example.decided_at, example.pk)


def effective_examples(
    *,
    sources: Iterable[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    origins: Iterable[str] | None = None,
    categories: Iterable[str] | None = SPAM_MODEL_CATEGORIES,
) -> list[LabelledExample]:
    """The examples that count, one per post, by CONFLICT_RULE; ordered by id.

    Filters apply to the candidates before the rule, so a time window takes the latest decision
    inside the window. `categories` applies after it: a post whose latest decision is about
    another harm (a harassment removal) is left out, not replaced by an older spam label. The
    default is the spam model's: spam labels and the clean negatives, which is what every
    dataset, replay and threshold built from these examples trains or tunes; None: all.
    """
    qs: QuerySet[LabelledExample] = LabelledExample.objects.all()
    if sources:
        qs = qs.filter(source_slug__in=list(sources))
    if since is not None:
        qs = qs.filter(decided_at__gte=since)
    if until is not None:
        qs = qs.filter(decided_at__lt=until)
    if origins:
        qs = qs.filter(origin__in=list(origins))
    candidates = list(qs.order_by("id"))
    decision_ids = [e.decision_id for e in candidates if e.decision_id is not None]
    undone = set(Decision.objects.filter(pk__in=decision_ids, undone_at__isnull=False).values_list("pk", flat=True))
    best: dict[tuple[str, str], LabelledExample] = {}
    for example in candidates:
        if example.decision_id in undone:
            continue
        key = _post_key(example)
        current = best.get(key)
        if current is None or _rank(example) > _rank(current):
            best[key] = example
    kept = best.values() if categories is None else [e for e in best.values() if e.category in set(categories)]
    return sorted(kept, key=lambda e: e.pk)


def dataset_list() -> QuerySet[DatasetVersion]:
    return DatasetVersion.objects.select_related("created_by").order_by("-version")


def training_run_list() -> QuerySet[TrainingRun]:
    return TrainingRun.objects.select_related("dataset", "started_by").order_by("-created_at")


def model_version_list() -> QuerySet[ModelVersion]:
    return ModelVersion.objects.select_related("dataset", "promoted_by", "training_run", "rollback_target").order_by(
        "name", "-version"
    )


def production_versions() -> dict[str, ModelVersion]:
    return {mv.name: mv for mv in ModelVersion.objects.filter(is_production=True).select_related("dataset")}


def labelled_example_count() -> int:
    return LabelledExample.objects.count()


def registry_groups() -> list[tuple[str, list[ModelVersion]]]:
    groups: dict[str, list[ModelVersion]] = {}
    for mv in model_version_list():
        groups.setdefault(mv.name, []).append(mv)
    return sorted(groups.items())


# (label, path into a metrics dict, True if higher is better, None if neither)
COMPARISON_ROWS: tuple[tuple[str, str, bool | None], ...] = (
    ("Test rows", "n", None),
    ("Spam in test", "spam", None),
    ("PR-AUC", "pr_auc", True),
    ("F1 (spam, at 0.5)", "f1", True),
    ("Precision (at 0.5)", "precision", True),
    ("Recall (at 0.5)", "recall", True),
    ("Accuracy (at 0.5)", "accuracy", True),
    ("Precision at remove threshold", "at_remove.precision", True),
    ("Recall at remove threshold", "at_remove.recall", True),
    ("False-positive rate at remove threshold", "at_remove.fpr", False),
    ("Auto-removed (test rows)", "at_remove.flagged", None),
    ("Spam auto-approved (miss rate)", "at_approve.spam_miss_rate", False),
)


def _dig(node: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def run_comparison(run: TrainingRun) -> list[dict[str, Any]]:
    """Candidate vs production, side by side, per bundle (and per sub-model for tabular)."""
    sections: list[dict[str, Any]] = []
    for bundle, cand_all in (run.candidate_metrics or {}).items():
        prod_all = (run.production_metrics or {}).get(bundle)
        parts = ("final", "link", "behaviour") if bundle == "tabular" else (None,)
        for part in parts:
            cand = cand_all.get(part) if part else cand_all
            prod = (prod_all or {}).get(part) if part else prod_all
            rows = []
            for label, path, higher in COMPARISON_ROWS:
                c, p = _dig(cand, path), _dig(prod, path)
                delta = c - p if isinstance(c, int | float) and isinstance(p, int | float) else None
                better = None
                if delta is not None and higher is not None and delta != 0:
                    better = delta > 0 if higher else delta < 0
                rows.append({"label": label, "candidate": c, "production": p, "delta": delta, "better": better})
            title = {"final": "Final score (fusion)", "link": "Link model", "behaviour": "Behaviour model"}.get(
                part or "", "Text model"
            )
            sections.append({"bundle": bundle, "title": title, "rows": rows, "has_production": prod is not None})
    return sections


def suite_list() -> QuerySet[EvaluationSuite]:
    return EvaluationSuite.objects.select_related("dataset", "created_by").order_by("created_at", "id")


CALIBRATION_TITLES = {"text": "Text model", "link": "Link model", "behaviour": "Behaviour model", "fusion": "Fusion"}


def run_calibration(run: TrainingRun) -> list[dict[str, Any]]:
    """Per calibrated model of the run: the calibrator and ECE/reliability before and after (on
    the test split where the trainer measured it, else on validation)."""
    out = []
    metrics = run.candidate_metrics or {}
    found: list[tuple[str, Any]] = []
    if isinstance(metrics.get("text"), dict):
        found.append(("text", metrics["text"].get("calibration")))
    tabular = metrics.get("tabular")
    if isinstance(tabular, dict):
        found += [(kind, (tabular.get("calibration") or {}).get(kind)) for kind in ("link", "behaviour", "fusion")]
    for key, calibration in found:
        if not calibration:
            continue
        shown = calibration.get("test") or calibration.get("validation")
        out.append(
            {
                "title": CALIBRATION_TITLES[key],
                "method": calibration.get("method"),
                "parameters": calibration.get("parameters") or {},
                "reason": calibration.get("reason", ""),
                "measured_on": "test split" if calibration.get("test") else "validation split",
                "summary": shown,
            }
        )
    return out


LEARNING_ROWS = 30


def learning_over_time(*, limit: int = LEARNING_ROWS) -> dict[str, Any]:
    """The text model's learning, newest first: each text run that produced a candidate
    (retraining or adaptation), promoted or held, with the labels it learned from (its
    dataset's examples), its F1 on each evaluation suite, and for a promoted one the share of
    posts scored while it was in production that went to the review queue.

    Three queries whatever the number of rows: the runs, their promoted versions, and one
    conditional aggregate over Score for every promotion window."""
    from django.db.models import Count, Q

    from scoring.models import Action, Score

    runs = list(
        TrainingRun.objects.filter(status=RunStatus.SUCCEEDED, scope__in=[TrainingScope.TEXT, TrainingScope.ALL])
        .select_related("dataset")
        .order_by("-created_at")[:limit]
    )
    promoted: dict[int, ModelVersion] = {
        mv.training_run_id: mv
        for mv in ModelVersion.objects.filter(name=ModelBundle.TEXT, training_run__in=runs, restored_from__isnull=True)
        if mv.training_run_id is not None
    }
    # A version's window: from its promotion to the next text promotion (or rollback) that serves
    # another text model. A row carried over from the version served just before it (an abuse
    # model's promotion renumbers the unchanged text model) does not end the window.
    versions = ModelVersion.objects.filter(name=ModelBundle.TEXT, promoted_at__isnull=False).order_by(
        "promoted_at", "pk"
    )
    starts: list[Any] = []
    previous: int | None = None
    for pk, promoted_at, restored_from in versions.values_list("pk", "promoted_at", "restored_from_id"):
        if previous is None or restored_from != previous:
            starts.append(promoted_at)
        previous = pk
    windows: dict[int, tuple[Any, Any]] = {}
    for run_id, mv in promoted.items():
        if mv.promoted_at is None:
            continue
        later = [t for t in starts if t > mv.promoted_at]
        windows[run_id] = (mv.promoted_at, later[0] if later else None)
    counts: dict[str, int] = {}
    if windows:
        aggregates: dict[str, Count] = {}
        for run_id, (start, end) in windows.items():
            window = Q(created_at__gte=start) & (Q(created_at__lt=end) if end is not None else Q())
            aggregates[f"n{run_id}"] = Count("id", filter=window)
            aggregates[f"q{run_id}"] = Count("id", filter=window & Q(action=Action.QUEUE))
        earliest = min(start for start, _ in windows.values())
        counts = Score.objects.filter(created_at__gte=earliest).aggregate(**aggregates)
    suites: list[str] = []
    rows: list[dict[str, Any]] = []
    for run in runs:
        f1: dict[str, Any] = {}
        for entry in ((run.report or {}).get("suites") or {}).get("text", []):
            if entry["name"] not in suites:
                suites.append(entry["name"])
            f1[entry["name"]] = (entry.get("candidate") or {}).get("f1")
        version = promoted.get(run.pk)
        scored = counts.get(f"n{run.pk}")
        queued = counts.get(f"q{run.pk}") or 0
        rows.append(
            {
                "run": run,
                "version": version,
                "labels": run.dataset.example_count,
                "f1": f1,
                "held": version is None,
                "reasons": ((run.report or {}).get("auto_promotion") or {}).get("reasons") or [],
                "scored": scored,
                "queue_rate": (queued / scored) if scored else None,
            }
        )
    for row in rows:
        row["f1_cells"] = [row["f1"].get(name) for name in suites]
    return {"suites": suites, "rows": rows}
