"""Calibrate an already trained text model without retraining it: fit a temperature on the SMS
validation split, fold it into the classifier head, and write the result as a new version.

New trainings calibrate on their own (modelops.text.train.run_training); this is for a model
trained before that. Then export and publish as usual:

    manage.py calibrate_text_model            # ARTIFACTS_DIR/text/current -> a new version, made current
    manage.py export_text_model               # ONNX fp32 + static INT8 of the calibrated checkpoint
    manage.py publish_models

Decisions at 0.5 do not change (a positive temperature keeps the sign of the logit difference);
scores above and below move towards or away from 0.5, so the thresholds now read as
probabilities (review them on the thresholds page after publishing).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from modelops.text.card import write_model_card
from modelops.text.data import load_sms_splits
from modelops.text.finetune import load_base, predict_proba
from modelops.text.metrics import spam_metrics
from modelops.text.train import (
    new_version,
    read_metrics,
    set_current,
    trained_model_dir,
    write_metrics,
)

# The checkpoint and tokenizer; ONNX files are left behind (they no longer match: re-export).
CHECKPOINT_FILES = (
    "config.json",
    "model.safetensors",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
)


class Command(BaseCommand):
    help = "Fit a temperature on the SMS validation split and fold it into a trained text model (new version)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--model-dir", default=None, help="trained artifact dir (default: ARTIFACTS_DIR/text/current)"
        )
        parser.add_argument("--out-root", default=None, help="where the new version goes (default: ARTIFACTS_DIR/text)")
        parser.add_argument("--no-current", action="store_true", help="do not point text/current at the new version")

    def handle(self, *args: Any, **options: Any) -> None:
        from modelops.text.calibrate import calibrate_text_model

        text_dir = Path(settings.ARTIFACTS_DIR) / "text"
        try:
            source = trained_model_dir(text_dir, options["model_dir"])
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from exc
        metrics = read_metrics(source)
        max_length = int(metrics["hyperparameters"]["max_length"])
        splits = load_sms_splits(seed=int(metrics["data"]["seed"]))
        out_root = Path(options["out_root"]) if options["out_root"] else text_dir
        version = new_version()
        out = out_root / version
        out.mkdir(parents=True, exist_ok=False)
        for name in CHECKPOINT_FILES:
            if (source / name).is_file():
                shutil.copy2(source / name, out / name)

        model, tokenizer = load_base(str(out))
        before, _ = predict_proba(model, tokenizer, splits.test.texts, max_length=max_length)
        calibration = calibrate_text_model(
            model,
            tokenizer,
            validation=(splits.validation.texts, splits.validation.labels),
            test=(splits.test.texts, splits.test.labels),
            max_length=max_length,
        )
        if calibration["method"] == "none":
            shutil.rmtree(out)
            raise CommandError(f"not calibrated: {calibration['reason']}")
        after, _ = predict_proba(model, tokenizer, splits.test.texts, max_length=max_length)
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)

        calibration["source_version"] = metrics.get("version")
        metrics.update({"version": version, "calibration": calibration, "calibrated_from": str(source)})
        metrics.pop("onnx", None)  # the old export is not this checkpoint's
        metrics["test"] = {k: v for k, v in metrics["test"].items() if not k.startswith("onnx")}
        metrics["test"]["pytorch_fp32"] = spam_metrics(splits.test.labels, after)
        write_metrics(out, metrics)
        write_model_card(out, metrics)
        if not options["no_current"]:
            set_current(out_root, out)
        f1_before, f1_after = spam_metrics(splits.test.labels, before)["f1"], metrics["test"]["pytorch_fp32"]["f1"]
        test = calibration["test"]
        self.stdout.write(
            self.style.SUCCESS(
                f"wrote {out}: temperature {calibration['temperature']:.4f}; SMS test ECE {test['ece_before']:.4f} -> "
                f"{test['ece_after']:.4f}; F1 at 0.5 {f1_before:.4f} -> {f1_after:.4f} (PyTorch fp32). "
                "Next: manage.py export_text_model"
            )
        )
