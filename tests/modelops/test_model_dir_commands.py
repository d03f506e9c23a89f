"""The commands that post-process a text model find it alike: --model-dir, else the current
text model under ARTIFACTS_DIR/text, and a CommandError that says so when there is none."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from modelops.text.familiarity import FAMILIARITY_FILE, load_familiarity

COMMANDS = ("fit_familiarity", "fit_text_cascade", "train_abuse_model", "train_lexical_model")


@pytest.mark.parametrize("command", COMMANDS)
def test_without_a_current_text_model_the_command_says_so(command: str, settings: Any, tmp_path: Path) -> None:
    settings.ARTIFACTS_DIR = tmp_path
    with pytest.raises(CommandError, match="no current text model"):
        call_command(command, stdout=StringIO())


def test_the_model_dir_option_names_the_model(tmp_path: Path) -> None:
    out = StringIO()
    call_command("fit_text_cascade", "--model-dir", str(tmp_path), stdout=out)
    assert "has no lexical model" in out.getvalue()
    call_command("fit_familiarity", "--model-dir", str(tmp_path), stdout=out)
    assert (tmp_path / FAMILIARITY_FILE).is_file() and load_familiarity(tmp_path) is not None
