"""Fit the text cascade's bounds (modelops/text/cascade.py) on the SMS validation split and store
them in the text model's serving.json. Publish afterwards (publish_models) so spam_pipeline
serves them."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from modelops.management.model_dir import add_model_dir_argument, text_model_dir
from modelops.text.baseline import load_lexical
from modelops.text.cascade import fit_for_model, write_bounds
from modelops.text.data import load_sms_splits


class Command(BaseCommand):
    help = "Fit the text cascade's lexical bounds on the validation split, into the text model's serving.json."

    def add_arguments(self, parser: CommandParser) -> None:
        add_model_dir_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        model_dir = text_model_dir(options["model_dir"])
        if load_lexical(model_dir) is None:
            # Nothing to decide from: spam_pipeline runs the transformer on every text.
            self.stdout.write(f"{model_dir} has no lexical model: no cascade")
            return
        bounds = fit_for_model(model_dir, load_sms_splits().validation.texts)
        path = write_bounds(model_dir, bounds)
        self.stdout.write(f"{path}: {bounds.as_json()}")
