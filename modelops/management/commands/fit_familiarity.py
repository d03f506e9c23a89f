"""Fit the familiarity reference (modelops/text/familiarity.py) beside an already trained text
model, without retraining it. Training a text model does this itself; this is for artifacts
trained before. Publish afterwards (publish_models) so spam_pipeline serves it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from modelops.text.data import load_sms_splits
from modelops.text.familiarity import fit_familiarity, save_familiarity
from modelops.text.train import current_model_dir


class Command(BaseCommand):
    help = "Fit the familiarity reference (SMS train split, thresholds on the test split) beside the text model."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--model-dir", default=None, help="artifact dir (default: ARTIFACTS_DIR/text/current)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            model_dir = (
                Path(options["model_dir"])
                if options["model_dir"]
                else current_model_dir(Path(settings.ARTIFACTS_DIR) / "text")
            )
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from exc
        splits = load_sms_splits()
        familiarity = fit_familiarity(splits.train.texts, splits.test.texts)
        path = save_familiarity(familiarity, model_dir)
        self.stdout.write(f"{path}: {familiarity.describe()}")
