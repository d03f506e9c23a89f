"""Train the link, behaviour and fusion XGBoost models (bootstrap on synthetic social context
joined to the SMS texts) into ARTIFACTS_DIR/tabular/<version>/ and point `current` at it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from modelops.tabular.bootstrap import BootstrapConfig, run_bootstrap
from modelops.tabular.text_probs import resolve_text_probabilities
from modelops.text.data import load_sms_splits


class Command(BaseCommand):
    help = "Train the feature models (link, behaviour, fusion) and write a new artifact version."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", default=None, help="artifact root (default: ARTIFACTS_DIR/tabular)")
        parser.add_argument(
            "--text-model-dir",
            action="append",
            default=None,
            help="text model artifact dir or root holding `current` (repeatable; default: ARTIFACTS_DIR/text)",
        )
        parser.add_argument(
            "--fallback-text", action="store_true", help="use the TF-IDF stand-in even if a text model exists"
        )
        parser.add_argument("--seed", type=int, default=BootstrapConfig.seed)
        parser.add_argument("--contexts-per-text", type=int, default=BootstrapConfig.contexts_per_text)
        parser.add_argument("--model-version", default=None, help="version directory name (default: UTC timestamp)")
        parser.add_argument("--no-current", action="store_true", help="do not move the `current` pointer")

    def handle(self, *args: Any, **options: Any) -> None:
        root = Path(options["output"] or Path(settings.ARTIFACTS_DIR) / "tabular")
        root.mkdir(parents=True, exist_ok=True)
        text_dirs = [Path(p) for p in (options["text_model_dir"] or [Path(settings.ARTIFACTS_DIR) / "text"])]
        splits = load_sms_splits()
        text_probs = resolve_text_probabilities(
            text_dirs=text_dirs,
            train_texts=splits.train.texts,
            train_labels=splits.train.labels,
            force_fallback=options["fallback_text"],
        )
        self.stdout.write(f"text probabilities: {text_probs.describe()['description']}")
        result = run_bootstrap(
            train=splits.train,
            validation=splits.validation,
            test=splits.test,
            text_probabilities=text_probs,
            out_root=root,
            config=BootstrapConfig(seed=options["seed"], contexts_per_text=options["contexts_per_text"]),
            version=options["model_version"],
            sms_summary=splits.summary(),
            make_current=not options["no_current"],
            log=self.stdout.write,
        )
        test = result.metrics["test"]
        for name in ("fusion", "text_only", "behaviour", "link"):
            m = test[name]
            self.stdout.write(
                f"test {name:10s} f1={m['f1']:.4f} precision={m['precision']:.4f} recall={m['recall']:.4f} "
                f"pr_auc={m['pr_auc']:.4f} accuracy={m['accuracy']:.4f}"
            )
        self.stdout.write(self.style.SUCCESS(f"feature models written to {result.version_dir}"))
