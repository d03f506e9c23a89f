"""`manage.py bootstrap_models`: from nothing to a servable model repository.

build_base_checkpoint -> train_text_model -> export_text_model -> fit_text_cascade ->
train_abuse_model -> train_feature_models -> publish_models, skipping every step whose output
already exists (--force re-runs all).
The run target of the README calls this when no model version exists yet.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from modelops import model_repository
from modelops.text.abuse import ABUSE_FILE
from modelops.text.baseline import LEXICAL_FILE
from modelops.text.cascade import CASCADE_KEY, read_bounds


def _text_dir() -> Path:
    return model_repository.resolve_current(Path(settings.ARTIFACTS_DIR) / "text" / "current")


def _tabular_dir() -> Path:
    return model_repository.resolve_current(Path(settings.ARTIFACTS_DIR) / "tabular" / "current")


def base_checkpoint_exists() -> bool:
    """A full-depth base is built (one cut to fewer layers, as earlier releases built for a
    shallower TEXT_MODEL_LAYERS, is built again: a shallower model is now distilled from a full one)."""
    # A hub id ("distilbert-base-uncased") is not a local path: nothing to build.
    if not str(settings.TEXT_MODEL_BASE).startswith(("/", ".")):
        return True
    from modelops.text.convert import checkpoint_layers, packaged_depth  # torch: only where a base is built

    base = Path(str(settings.TEXT_MODEL_BASE))
    if not (base / "config.json").exists():
        return False
    # A checkpoint that build_base_checkpoint did not write is the operator's own: used as it is.
    layers = checkpoint_layers(base)
    return layers is None or layers == packaged_depth()


def trained_depth_differs() -> int | None:
    """The served text model's layers where they differ from TEXT_MODEL_LAYERS, else None: a
    changed depth takes effect only when the text model is trained again (--force)."""
    config = _text_dir() / "config.json"
    if not config.exists():
        return None
    layers = json.loads(config.read_text()).get("n_layers")
    return int(layers) if layers is not None and layers != settings.TEXT_MODEL_LAYERS else None


def text_trained() -> bool:
    return (_text_dir() / "config.json").exists()


def text_exported() -> bool:
    return (_text_dir() / "serving.json").exists()


def text_cascade_fitted() -> bool:
    # export_text_model writes a new serving.json, so a re-export asks for the bounds again;
    # without a lexical model there is nothing to fit.
    return read_bounds(_text_dir()) is not None or not (_text_dir() / LEXICAL_FILE).exists()


def abuse_trained() -> bool:
    return (_text_dir() / ABUSE_FILE).exists()


def tabular_trained() -> bool:
    try:
        for kind, _names in model_repository.TREE_MODELS.values():
            model_repository._tree_file(_tabular_dir(), kind)
    except model_repository.PublishError:
        return False
    return True


def repository_current() -> bool:
    """Every model has a version and the served weights are the current artifacts."""
    repo = Path(settings.TRITON_MODEL_REPOSITORY)
    if any(model_repository.latest_version(m, repository=repo) is None for m in model_repository.ALL_MODELS):
        return False
    served = {
        info.model: info
        for m in model_repository.ALL_MODELS
        for info in model_repository.list_versions(m, repository=repo)[-1:]
    }
    try:
        onnx = model_repository._text_model_file(_text_dir(), model_repository._read_serving(_text_dir()))
        if served["text_classifier"].sha256 != model_repository._sha256(onnx):
            return False
        abuse, served_abuse = _text_dir() / ABUSE_FILE, served["tokenizer"].path / ABUSE_FILE
        if abuse.exists() and not (
            served_abuse.exists() and model_repository._sha256(served_abuse) == model_repository._sha256(abuse)
        ):
            return False
        # The bundle carries the artifact's cascade bounds unless the deployment turned it off.
        wanted = model_repository._read_serving(_text_dir()).get(CASCADE_KEY) if settings.TEXT_CASCADE else None
        if json.loads((served["tokenizer"].path / "serving.json").read_text()).get(CASCADE_KEY) != wanted:
            return False
        for model, (kind, _names) in model_repository.TREE_MODELS.items():
            if served[model].sha256 != model_repository._sha256(model_repository._tree_file(_tabular_dir(), kind)):
                return False
    except model_repository.PublishError:
        return False
    return True


class Command(BaseCommand):
    help = "Build, train, export and publish every model, skipping steps already done."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--force", action="store_true", help="run every step even if its output exists")

    def handle(self, *args: Any, **options: Any) -> None:
        force = options["force"]
        # Each step's check runs when its turn comes: a step's output depends on the steps
        # before it (the cascade's bounds need the lexical model that training writes).
        steps: list[tuple[str, Callable[[], bool]]] = [
            ("build_base_checkpoint", base_checkpoint_exists),
            ("train_text_model", text_trained),
            ("export_text_model", text_exported),
            ("fit_text_cascade", text_cascade_fitted),
            ("train_abuse_model", abuse_trained),
            ("train_feature_models", tabular_trained),
        ]
        for command, done in steps:
            if not force and done():
                self.stdout.write(f"skip {command}: output exists")
                continue
            self._run(command)
        trained = trained_depth_differs()
        if trained is not None:
            self.stdout.write(
                self.style.WARNING(
                    f"the text model has {trained} layers, TEXT_MODEL_LAYERS is {settings.TEXT_MODEL_LAYERS}: "
                    "run bootstrap_models --force to train it again at that depth (retraining keeps the depth)"
                )
            )
        if repository_current() and not force:
            self.stdout.write("skip publish_models: the repository already serves the current artifacts")
            if model_repository.stale_code(repository=Path(settings.TRITON_MODEL_REPOSITORY)):
                self._run("publish_models", "--code-only")
            return
        self._run("publish_models")

    def _run(self, command: str, *args: str) -> None:
        self.stdout.write(f"== {command}")
        started = time.monotonic()
        try:
            call_command(command, *args, stdout=self.stdout, stderr=self.stderr)
        except CommandError as exc:
            raise CommandError(f"{command} failed: {exc}") from exc
        self.stdout.write(f"== {command} done in {time.monotonic() - started:.0f}s")
