"""Fit the lexical half of the served text score (TF-IDF + logistic regression on the SMS train
split, C chosen on validation) beside an already trained text model, without retraining the
transformer. Training a text model does this itself; this is for artifacts trained before."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from modelops.management.model_dir import add_model_dir_argument, text_model_dir
from modelops.text.baseline import DEFAULT_LEXICAL_WEIGHT, save_lexical, train_baseline
from modelops.text.data import load_sms_splits
from modelops.text.inference import SERVING_FILE


class Command(BaseCommand):
    help = "Fit the lexical model blended into the text score and save it beside the text model."

    def add_arguments(self, parser: CommandParser) -> None:
        add_model_dir_argument(parser)
        parser.add_argument(
            "--weight", type=float, default=DEFAULT_LEXICAL_WEIGHT, help="share of the lexical model (0 turns it off)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        model_dir = text_model_dir(options["model_dir"])
        if not 0.0 <= options["weight"] <= 1.0:
            raise CommandError("--weight must be between 0 and 1")
        serving_path = model_dir / SERVING_FILE
        if not serving_path.is_file():
            raise CommandError(f"{serving_path} missing: export the text model first")
        splits = load_sms_splits()
        result = train_baseline(
            splits.train.texts, splits.train.labels, splits.validation.texts, splits.validation.labels
        )
        path = save_lexical(result, model_dir)
        serving = json.loads(serving_path.read_text())
        serving["lexical_weight"] = options["weight"]
        serving_path.write_text(json.dumps(serving, indent=2) + "\n")
        self.stdout.write(f"{path} ({result.describe()}), lexical_weight {options['weight']}")
