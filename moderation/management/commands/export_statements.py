"""Export statements of reasons as JSON lines in the DSA transparency database's submission
fields, one statement a line (a submission batch is up to 100 lines of it, wrapped as
{"statements": [...]}).

    manage.py export_statements --source chirp --since 2026-11-01 --until 2026-12-01 -o nov.jsonl
"""

from __future__ import annotations

from datetime import date, datetime, time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from moderation.models import Source
from moderation.selectors.statements import statement_lines, statements_for_export


def _day(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return timezone.make_aware(datetime.combine(date.fromisoformat(value), time.min))
    except ValueError as exc:
        raise CommandError(f"{value!r} is not a YYYY-MM-DD date.") from exc


class Command(BaseCommand):
    help = "Statements of reasons as JSON lines (DSA transparency database fields)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--source", default="", help="A source's slug; default every source.")
        parser.add_argument("--since", help="First day applied (YYYY-MM-DD, inclusive).")
        parser.add_argument("--until", help="Day after the last (YYYY-MM-DD, exclusive).")
        parser.add_argument("-o", "--output", default="-", help="File to write; '-' is standard output.")

    def handle(self, *args: Any, **options: Any) -> None:
        source = None
        if options["source"]:
            source = Source.objects.filter(slug=options["source"]).first()
            if source is None:
                raise CommandError(f"No source {options['source']!r}.")
        rows = statements_for_export(source=source, since=_day(options["since"]), until=_day(options["until"]))
        count = 0
        if options["output"] == "-":
            for line in statement_lines(rows):
                self.stdout.write(line, ending="")
                count += 1
        else:
            with open(options["output"], "w", encoding="utf-8") as out:
                for line in statement_lines(rows):
                    out.write(line)
                    count += 1
        self.stderr.write(f"{count} statements")
