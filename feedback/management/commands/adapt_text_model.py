"""Run one adaptation round now, in this process (feedback.services.adaptation), then the abuse
model's when abuse or hate removals arrived (its summary under "abuse"), and print the summary as
JSON. Returns once a passing candidate is promoted and served."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from feedback.services.adaptation import adaptation_round


class Command(BaseCommand):
    help = (
        "Refit the text model's lexical half and familiarity reference on the SMS replay plus every label, "
        "evaluate on every suite, promote through the gate; then the abuse model's round on new abuse or hate "
        "removals. Prints a JSON summary."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--force",
            action="store_true",
            help=(
                "run even with fewer than ADAPTATION_MIN_NEW_LABELS (ABUSE_ADAPTATION_MIN_NEW_LABELS) new labels, "
                "or with ADAPTATION_ENABLED off (the abuse model's round still obeys ABUSE_ADAPTATION_ENABLED)"
            ),
        )

    def handle(self, *args: Any, **options: Any) -> str:
        summary = adaptation_round(trigger="command", force=bool(options["force"]))
        text = json.dumps(summary, indent=2, sort_keys=True, default=str)
        if summary["status"] == "failed":
            raise CommandError(text)
        self.stdout.write(text)
        return ""
