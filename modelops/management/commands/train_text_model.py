"""Fine-tune the DistilBERT text model; writes ARTIFACTS_DIR/text/<version>/ and updates text/current.

Where settings.TEXT_MODEL_LAYERS is below the base checkpoint's depth, it trains the full-depth
model first (kept as a version of its own, named ``<version>-teacher``) and then distils the served
model from it (modelops.text.distill): every teacher layer that ``spaced_layers`` picks.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from modelops.text.benign_corpora import CORPORA, load_benign_splits
from modelops.text.data import SPLIT_SEED, load_sms_splits
from modelops.text.distill import model_depth, parse_layers, spaced_layers

# libgomp reads this when torch loads: busy-waiting OpenMP threads collapse throughput on a shared,
# oversubscribed CPU (measured here: 9.7 s/step spinning vs 2.1 s/step passive with 2 threads).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from modelops.text.train import TrainConfig, new_version, run_training
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
            "--student-layers",
            default=None,
            help="the teacher's layers the student keeps (default: TEXT_MODEL_LAYERS of them, evenly spaced)",
        )
        parser.add_argument(
            "--distill-weight",
            type=float,
            default=defaults.distill_weight,
            help="share of the student's loss on the teacher's logits (with --teacher; 0: the labels alone)",
        )
        parser.add_argument("--distill-temperature", type=float, default=defaults.distill_temperature)
        parser.add_argument(
            "--distill-shuffled-share",
            type=float,
            default=defaults.distill_shuffled_share,
            help="share of the training texts the student also sees word-shuffled (with --teacher)",
        )
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
            distill_shuffled_share=options["distill_shuffled_share"],
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
        version = options["model_version"] or new_version()
        train = partial(
            run_training,
            splits,
            config,
            text_dir,
            progress=not options["no_progress"],
            log=self.stdout.write,
            benign=benign,
            remove_threshold=DEFAULT_REMOVE_THRESHOLD,
        )
        try:
            teacher, layers = self._teacher_and_layers(options, config, version, train)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        out = train(version=version, teacher=teacher, student_layers=layers)
        self.stdout.write(self.style.SUCCESS(f"text model written to {out} (text/current points at it)"))

    def _teacher_and_layers(
        self, options: dict[str, Any], config: TrainConfig, version: str, train: Callable[..., Path]
    ) -> tuple[Path | None, tuple[int, ...] | None]:
        """The teacher to build the served model from, and its layers to keep; (None, None) to
        fine-tune the base itself. Below the base's depth with no --teacher, the teacher is
        trained here first, as the version ``<version>-teacher``, not made current: a failed
        student run leaves the served model as it was."""
        distilling = options["distill_weight"] > 0 or options["distill_shuffled_share"] > 0
        asked = parse_layers(options["student_layers"]) if options["student_layers"] else None
        teacher = Path(options["teacher"]) if options["teacher"] else None
        depth = model_depth(str(teacher) if teacher is not None else config.base)
        if teacher is None and depth <= settings.TEXT_MODEL_LAYERS:
            if asked or distilling:
                raise ValueError(
                    "--student-layers, --distill-weight and --distill-shuffled-share need --teacher, "
                    "or TEXT_MODEL_LAYERS below the base's depth"
                )
            return None, None
        layers = asked or spaced_layers(min(settings.TEXT_MODEL_LAYERS, depth), depth)
        if layers[-1] >= depth:  # checked before any training
            raise ValueError(f"the teacher has {depth} layers; cannot keep {list(layers)}")
        if teacher is None:
            self.stdout.write(
                f"TEXT_MODEL_LAYERS is {settings.TEXT_MODEL_LAYERS}: training the {depth}-layer teacher first"
            )
            teacher = train(version=f"{version}-teacher", make_current=False)
        return teacher, layers
