"""`manage.py publish_models`: copy the current trained artifacts into the Triton repository
as new versions, and load them into a running server (no restart).

Sources (override with --text/--tabular): ARTIFACTS_DIR/text/current (textmodel) and
ARTIFACTS_DIR/tabular/current (tabular). See modelops/model_repository.py for the layout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from contracts.triton import served_models
from modelops import model_repository


class Command(BaseCommand):
    help = "Publish the current text and tabular artifacts as new Triton model versions."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--text", type=Path, default=None, help="text artifact dir")
        parser.add_argument("--tabular", type=Path, default=None, help="tabular artifact dir")
        parser.add_argument("--repository", type=Path, default=None)
        parser.add_argument("--only", choices=["text", "tabular"], default=None)
        parser.add_argument("--no-load", action="store_true", help="do not load into a running server")
        parser.add_argument(
            "--code-only",
            action="store_true",
            help="only re-publish served weights whose model.py changed in the source tree",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["code_only"]:
            published = model_repository.refresh_code(repository=options["repository"])
            self._report(published, options)
            return
        root = Path(settings.ARTIFACTS_DIR)
        text = options["text"] or root / "text" / "current"
        tabular = options["tabular"] or root / "tabular" / "current"
        if options["only"] == "tabular":
            text = None
        if options["only"] == "text":
            tabular = None
        text = model_repository.resolve_current(Path(text)) if text is not None else None
        tabular = model_repository.resolve_current(Path(tabular)) if tabular is not None else None
        for label, path in (("text", text), ("tabular", tabular)):
            if path is not None and not Path(path).is_dir():
                raise CommandError(f"{label} artifacts not found at {path}")
        try:
            published = model_repository.publish(
                model_repository.Artifacts(text=text, tabular=tabular), repository=options["repository"]
            )
            # Models the artifacts did not touch may still carry an older model.py.
            published.update(model_repository.refresh_code(repository=options["repository"]))
        except model_repository.PublishError as exc:
            raise CommandError(str(exc)) from exc
        self._report(published, options)

    def _report(self, published: dict[str, int], options: dict[str, Any]) -> None:
        for model, version in published.items():
            self.stdout.write(f"published {model} version {version}")
        if not published:
            self.stdout.write("nothing to publish")
        if not options["no_load"] and published:
            self._load(list(published))

    def _load(self, models: list[str]) -> None:
        from scoring.serving import TritonError, TritonUnavailable, get_client
        from scoring.triton_replicas import load_everywhere

        client = get_client()
        if not client.is_ready() and not _server_up(client):
            self.stdout.write("triton not running: new versions load at the next start")
            return
        # Sub-models first, the entry point last, so it never calls a half-switched set; models
        # this deployment does not load stay published on disk only.
        served = served_models(standalone=settings.TRITON_STANDALONE_MODELS)
        order = [m for m in served if m in models]
        try:
            replicas = load_everywhere(order)
        except (TritonUnavailable, TritonError) as exc:
            raise CommandError(f"loading {', '.join(order)} failed: {exc}") from exc
        for model in order:
            self.stdout.write(f"loaded {model} on {len(replicas)} Triton replica(s)")


def _server_up(client: Any) -> bool:
    try:
        client.repository_index()
    except Exception:
        return False
    return True
