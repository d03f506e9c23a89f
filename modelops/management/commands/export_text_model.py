"""Export the current text model to ONNX (fp32 + static INT8), evaluate both, write serving.json and the card."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from modelops.text.data import load_sms_splits

# See train_text_model: passive OpenMP threads keep torch from spinning on a shared CPU.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from modelops.text.export import run_export, update_artifact
from modelops.text.train import read_metrics, trained_model_dir


class Command(BaseCommand):
    help = "Export the text model to ONNX (opset 17), check parity, quantise to static INT8, pick the served file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--model-dir", default=None, help="artifact dir (default: ARTIFACTS_DIR/text/current)")
        parser.add_argument("--calibration-texts", type=int, default=300, help="training texts for INT8 calibration")
        parser.add_argument("--latency-runs", type=int, default=200)
        parser.add_argument("--threads", type=int, default=2, help="ONNX Runtime intra-op threads")
        parser.add_argument("--no-optimizer", action="store_true", help="skip measuring the transformer optimizer")

    def handle(self, *args: Any, **options: Any) -> None:
        text_dir = Path(settings.ARTIFACTS_DIR) / "text"
        try:
            model_dir = trained_model_dir(text_dir, options["model_dir"])
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from exc
        metrics = read_metrics(model_dir)
        max_length = int(metrics["hyperparameters"]["max_length"])
        splits = load_sms_splits(seed=int(metrics["data"]["seed"]))
        calibration = random.Random(0).sample(
            splits.train.texts, min(options["calibration_texts"], len(splits.train.texts))
        )
        report = run_export(
            model_dir,
            calibration_texts=calibration,
            eval_texts=splits.test.texts,
            eval_labels=splits.test.labels,
            max_length=max_length,
            latency_runs=options["latency_runs"],
            measure_optimizer=not options["no_optimizer"],
            threads=options["threads"],
        )
        update_artifact(model_dir, report)
        self.stdout.write(
            self.style.SUCCESS(
                f"exported {model_dir}: parity {report.parity_max_abs_diff:.1e}, int8 batch-invariance "
                f"{report.batch_invariance['int8']:.1e}; serving {report.serve} ({report.serve_reason})"
            )
        )
