"""The text model directory the post-processing commands work on: --model-dir, else the current
text model under ARTIFACTS_DIR/text."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from modelops.text.train import current_model_dir


def add_model_dir_argument(parser: CommandParser) -> None:
    parser.add_argument("--model-dir", default=None, help="artifact dir (default: ARTIFACTS_DIR/text/current)")


def text_model_dir(model_dir: str | None) -> Path:
    """`model_dir`, else the current text model; CommandError when there is none."""
    try:
        return Path(model_dir) if model_dir else current_model_dir(Path(settings.ARTIFACTS_DIR) / "text")
    except FileNotFoundError as exc:
        raise CommandError(str(exc)) from exc
