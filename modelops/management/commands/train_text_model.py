"""Fine-tune the DistilBERT text model; writes ARTIFACTS_DIR/text/<version>/ and updates text/current."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from modelops.text.benign_corpora import CORPORA, load_benign_splits
from modelops.text.data import SPLIT_SEED, load_sms_splits
from modelops.text.distill import parse_layers

# libgomp reads this when torch loads: busy-waiting OpenMP threads collapse throughput on a shared,
# oversubscribed CPU (measured here: 9.7 s/step spinning vs 2.1 s/step passive with 2 threads).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from modelops.text.train import TrainConfig, run_training
from scoring.services.policy import DEFAULT_REMOVE_THRESHOLD


class Command(BaseCommand):
    help = "Fine-tune DistilBertForSequenceClassification for spam on the SMS collection (2 CPU threads)."

    def add_arguments(self, parser: CommandParser) -> None:
        defaults = TrainConfig(base="")
        parser.add_argument("--base", default=None, help="base checkpoint path or hub id (settings.TEXT_MODEL_BASE)")
        parser.add_argument("--output-dir", default=None, help="parent of version dirs (ARTIFACTS_DIR/text)")
        parser.add_argument("--model-version", default=None, help="version dir name (default: UTC timestamp)")
        parser.add_argument("--epochs", type=int, default=defaults.epochs)
        parser.add_argument("--batch-size", type=int, default=defaults.batch_size)
        parser.add_argument("--lr", type=float, default=defaults.learning_rate)
        parser.add_argument("--threads", type=int, default=defaults.threads)
        parser.add_argument("--seed", type=int, default=SPLIT_SEED)
        parser.add_argument("--max-steps", type=int, default=None, help="stop after N optimizer steps (smoke runs)")
        parser.add_argument("--no-progress", action="store_true")
        parser.add_argument(
            "--teacher",
            default=None,
            help="a trained text model dir: train a shallower student of it (modelops.text.distill) instead of --base",
        )
        parser.add_argument(
            "--student-layers", default="0,2,4", help="the teacher's layers the student keeps (with --teacher)"
        )
        parser.add_argument("--distill-weight", type=float, default=defaults.distill_weight)
        parser.add_argument("--distill-temperature", type=float, default=defaults.distill_temperature)
        parser.add_argument(
            "--benign-corpora",
            default=None,
            help="comma-separated benign corpora to add ('' = SMS only; default settings.TEXT_BENIGN_CORPORA): "
            + ", ".join(CORPORA),
        )

    def handle(self, *args: Any, **options: Any) -> None:
        config = TrainConfig(
            base=str(options["base"] or settings.TEXT_MODEL_BASE),
            max_length=settings.TEXT_MAX_LENGTH,
            epochs=options["epochs"],
            batch_size=options["batch_size"],
            learning_rate=options["lr"],
            threads=options["threads"],
            seed=options["seed"],
            max_steps=options["max_steps"],
            distill_weight=options["distill_weight"],
            distill_temperature=options["distill_temperature"],
            # The bootstrap's model is served: a busy machine may slow it, not stop it early.
            budget_clock="cpu",
        )
        text_dir = Path(options["output_dir"] or Path(settings.ARTIFACTS_DIR) / "text")
        splits = load_sms_splits(seed=options["seed"])
        names = (
            settings.TEXT_BENIGN_CORPORA if options["benign_corpora"] is None else options["benign_corpora"].split(",")
        )
        names = [name.strip() for name in names if name.strip()]
        unknown = sorted(set(names) - set(CORPORA))
        if unknown:
            raise CommandError(f"unknown benign corpora {unknown}; known: {sorted(CORPORA)}")
        benign = load_benign_splits(Path(settings.BENIGN_DATA_CACHE), names, seed=options["seed"]) if names else None
        if benign is not None:
            for name, why in benign.missing.items():
                self.stderr.write(f"benign corpus {name} left out: {why}")
        out = run_training(
            splits,
            config,
            text_dir,
            version=options["model_version"],
            progress=not options["no_progress"],
            log=self.stdout.write,
            benign=benign,
            remove_threshold=DEFAULT_REMOVE_THRESHOLD,
            teacher=Path(options["teacher"]) if options["teacher"] else None,
            student_layers=parse_layers(options["student_layers"]) if options["teacher"] else None,
        )
        self.stdout.write(self.style.SUCCESS(f"text model written to {out} (text/current points at it)"))
