"""Text-model candidates: fine-tune DistilBERT on a dataset's texts with textmodel's trainer,
export to ONNX (fp32, the file the Triton publish step copies), and score both the exported
candidate and the served production text model on the same held-out texts.

Starting point (first that exists): settings.FEEDBACK_TEXT_BASE, the current fine-tuned
checkpoint ARTIFACTS_DIR/text/current (warm start: the candidate keeps what production
learned), settings.TEXT_MODEL_BASE. Budget knobs: FEEDBACK_TEXT_EPOCHS (default 2),
FEEDBACK_TEXT_MAX_STEPS (default none), FEEDBACK_TEXT_TIME_BUDGET_S (default 15 minutes).
INT8 is left to textmodel's export command (it needs its calibration and parity checks).
A temperature fitted on the validation texts is folded into the classifier head before export
(modelops.calibration), so the exported candidate serves calibrated probabilities.

The lexical half of the text score (modelops/text/baseline.py: TF-IDF + logistic regression,
blended with the transformer as served) is refitted on the same training texts and saved beside
the candidate, so a promoted model keeps the blend that holds down false positives on
unfamiliar text, and the gate compares the candidate's served score with production's.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from django.conf import settings

from feedback.services.datasets import artifacts_dir
from feedback.services.evaluation import classification_metrics
from feedback.services.tabular import labels_of

if TYPE_CHECKING:
    from modelops.text.inference import OnnxTextClassifier
    from modelops.text.interpolate import Retained

TextPredictor = Callable[[Sequence[Mapping[str, Any]]], np.ndarray]


def text_base() -> str:
    explicit = getattr(settings, "FEEDBACK_TEXT_BASE", None)
    if explicit:
        return str(explicit)
    current = artifacts_dir() / "text" / "current"
    if (current / "config.json").exists():
        return str(current.resolve())
    return str(settings.TEXT_MODEL_BASE)


def _texts(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(r["text"]) for r in rows]


def train_text_candidate(
    *,
    run_id: int,
    train: Sequence[Mapping[str, Any]],
    validation: Sequence[Mapping[str, Any]],
    test: Sequence[Mapping[str, Any]],
    out_dir: Path,
    thresholds: Mapping[str, Any],
    progress: Callable[[float, str], None],
    train_weights: Sequence[float] | None = None,
    epochs: int | None = None,
    time_budget_s: float | None = None,
    freeze_layers: int = 0,
    retained: Retained | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Fine-tune, calibrate, fit the lexical half and familiarity, export to fp32 ONNX in out_dir;
    returns it with the candidate's metrics on ``test``.

    ``retained``: what the fine-tune must not forget (an adaptation round's SMS validation
    split, within a budget of the served score's F1). When given, the fine-tune is averaged with
    its starting checkpoint (modelops.text.interpolate) at the largest weight that stays within
    the budget, before anything is calibrated or exported."""
    from feedback.services.promotion import served_text_dir
    from modelops.text.abuse import abuse_carry
    from modelops.text.baseline import save_lexical, train_baseline
    from modelops.text.calibrate import calibrate_text_model
    from modelops.text.export import export_onnx, write_serving
    from modelops.text.familiarity import fit_familiarity, save_familiarity
    from modelops.text.inference import OnnxTextClassifier
    from modelops.text.train import TrainConfig, train_text_model

    base = text_base()
    max_length = int(getattr(settings, "TEXT_MAX_LENGTH", 128))
    config = TrainConfig(
        base=base,
        max_length=max_length,
        epochs=epochs if epochs is not None else int(getattr(settings, "FEEDBACK_TEXT_EPOCHS", 2)),
        max_steps=getattr(settings, "FEEDBACK_TEXT_MAX_STEPS", None),
        time_budget_s=time_budget_s
        if time_budget_s is not None
        else float(getattr(settings, "FEEDBACK_TEXT_TIME_BUDGET_S", 15 * 60)),
        freeze_layers=freeze_layers,
    )
    progress(0.0, f"text: fine-tuning from {base} on {len(train)} texts (max_length {max_length})")
    y_train = [int(v) for v in labels_of(train)]
    y_val = [int(v) for v in labels_of(validation)]
    trained = train_text_model(
        _texts(train),
        y_train,
        _texts(validation) or _texts(train)[:1],
        y_val or y_train[:1],
        config,
        progress=False,
        log=lambda message: progress(0.5, f"text: {message}"),
        train_weights=train_weights,
    )
    interpolation = None
    if retained is not None:
        from feedback.services.replay import TrainingRows
        from modelops.text.finetune import load_base
        from modelops.text.interpolate import interpolate_within

        progress(0.7, "text: averaging the fine-tune with its start within the forgetting budget")
        start, _ = load_base(base)
        # The labels alone: the replayed SMS rows are what ``retained`` already measures.
        learnt = [r for r in validation if TrainingRows.is_label(r)]
        interpolation = interpolate_within(
            trained.model,
            trained.tokenizer,
            start.state_dict(),
            retained=retained,
            max_length=max_length,
            learnt=(_texts(learnt), [int(v) for v in labels_of(learnt)]),
        )
        del start
    progress(0.75, "text: fitting the temperature on the validation texts")
    calibration = calibrate_text_model(
        trained.model,
        trained.tokenizer,
        validation=(_texts(validation), y_val),
        test=(_texts(test), [int(v) for v in labels_of(test)]),
        max_length=max_length,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    trained.model.save_pretrained(out_dir)
    trained.tokenizer.save_pretrained(out_dir)
    progress(0.78, "text: fitting the lexical half of the text score")
    lexical = train_baseline(_texts(train), y_train, _texts(validation) or _texts(train), y_val or y_train)
    save_lexical(lexical, out_dir)
    # The run's training texts (the labels and the replayed ones) are what the model has seen.
    save_familiarity(fit_familiarity(_texts(train), _texts(test) or _texts(validation) or _texts(train)), out_dir)
    served = served_text_dir()
    if served is not None:
        abuse_carry(from_dir=served[1], to_dir=out_dir)  # the tokenizer's folder carries it
    progress(0.8, "text: exporting to ONNX")
    export_onnx(out_dir, out_dir / "model.onnx")
    write_serving(
        out_dir,
        file="model.onnx",
        max_length=max_length,
        reason=f"feedback retraining run {run_id}: fp32 export (int8 via the export_text_model command)",
        pad_token_id=int(trained.tokenizer.pad_token_id or 0),
    )
    if settings.TEXT_CASCADE:
        # The cascade's bounds belong to this lexical half and this transformer: fitted afresh,
        # or the published candidate would skip nothing (or skip by another model's bounds).
        from modelops.text.cascade import fit_for_model, write_bounds

        progress(0.85, "text: fitting the cascade's bounds on the validation texts")
        write_bounds(out_dir, fit_for_model(out_dir, _texts(validation) or _texts(train)))
    progress(0.9, "text: scoring the test texts with the exported candidate")
    probs = OnnxTextClassifier(out_dir).predict_proba(_texts(test))
    metrics = classification_metrics(
        labels_of(test), probs, remove_threshold=thresholds["remove"], approve_threshold=thresholds["approve"]
    )
    metrics["base"] = base
    metrics["calibration"] = calibration
    metrics["lexical"] = {"model": lexical.describe(), "validation_f1": lexical.validation["f1"]}
    metrics["train_rows"] = len(train)
    metrics["best_epoch"] = trained.best_epoch
    metrics["train_seconds"] = round(trained.train_seconds, 1)
    if interpolation is not None:
        metrics["interpolation"] = interpolation.as_report()
    return out_dir, metrics


@contextmanager
def production_text_predictor() -> Iterator[TextPredictor | None]:
    """The served text_classifier + tokenizer versions, run with ONNX Runtime (None if nothing
    is served). A context: the two version folders are joined in a temporary directory."""
    with production_text_classifier() as classifier:
        if classifier is None:
            yield None
            return
        yield lambda rows: classifier.predict_proba(_texts(rows))


@contextmanager
def production_text_classifier() -> Iterator[OnnxTextClassifier | None]:
    """The served text model as one OnnxTextClassifier (its transformer, lexical half and blend
    weight), None if nothing is served; valid inside the context."""
    from feedback.services.promotion import served_text_dir
    from modelops.text.inference import OnnxTextClassifier

    served = served_text_dir()
    if served is None:
        yield None
        return
    clf_dir, tok_dir = served
    with tempfile.TemporaryDirectory(prefix="prod-text-") as tmp:
        joined = Path(tmp)
        for folder in (tok_dir, clf_dir):  # classifier last: its serving.json wins
            for item in folder.iterdir():
                if item.is_file() and item.name != "model.py":
                    target = joined / item.name
                    if target.exists():
                        target.unlink()
                    target.symlink_to(item)
        yield OnnxTextClassifier(joined, file="model.onnx")


def candidate_text_predictor(model_dir: Path) -> TextPredictor:
    from modelops.text.inference import OnnxTextClassifier

    classifier = OnnxTextClassifier(model_dir)
    return lambda rows: classifier.predict_proba(_texts(rows))


def evaluate_production_text(
    *, test: Sequence[Mapping[str, Any]], thresholds: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The served text model scored on the same texts as the candidate."""
    with production_text_predictor() as predict:
        if predict is None:
            return None
        probs = predict(test)
    return classification_metrics(
        labels_of(test), probs, remove_threshold=thresholds["remove"], approve_threshold=thresholds["approve"]
    )
