"""Fit the familiarity reference (modelops/text/familiarity.py) beside an already trained text
model, without retraining it. Training a text model does this itself; this is for artifacts
trained before. Publish afterwards (publish_models) so spam_pipeline serves it."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from modelops.management.model_dir import add_model_dir_argument, text_model_dir
from modelops.text.data import load_sms_splits
from modelops.text.familiarity import fit_familiarity, save_familiarity


class Command(BaseCommand):
    help = "Fit the familiarity reference (SMS train split, thresholds on the test split) beside the text model."

    def add_arguments(self, parser: CommandParser) -> None:
        add_model_dir_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        model_dir = text_model_dir(options["model_dir"])
        splits = load_sms_splits()
        familiarity = fit_familiarity(splits.train.texts, splits.test.texts)
        path = save_familiarity(familiarity, model_dir)
        self.stdout.write(f"{path}: {familiarity.describe()}")
