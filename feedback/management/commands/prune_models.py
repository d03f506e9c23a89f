"""Delete trained models nothing serves or could roll back to (feedback.services.model_storage):
old run candidates, artifact versions and Triton version folders. Prints what it removed, or with
--dry-run what it would remove, as JSON."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from feedback.services.datasets import artifacts_dir
from feedback.services.model_storage import prune_model_storage, storage_plan
from feedback.services.promotion import repository


class Command(BaseCommand):
    help = (
        "Delete run candidates, artifact versions and Triton version folders beyond production, its rollback "
        "target and the newest MODEL_STORAGE_KEEP of each; prints a JSON summary."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--keep", type=int, default=None, help="versions kept (default MODEL_STORAGE_KEEP)")
        parser.add_argument(
            "--min-age-s",
            type=float,
            default=None,
            help="nothing written more recently is deleted (default MODEL_STORAGE_MIN_AGE_S)",
        )
        parser.add_argument("--dry-run", action="store_true", help="print what would be deleted, delete nothing")

    def handle(self, *args: Any, **options: Any) -> str:
        keep = settings.MODEL_STORAGE_KEEP if options["keep"] is None else options["keep"]
        if keep < 1:
            raise CommandError("--keep must be at least 1: the served version is never pruned")
        run = storage_plan if options["dry_run"] else prune_model_storage
        plan = run(keep=keep, min_age_s=options["min_age_s"])
        summary = plan.as_dict({"triton": repository(), "artifacts": artifacts_dir()})
        if options["dry_run"]:
            summary = {"dry_run": True, "to_remove": summary["removed"], "kept": plan.kept}
            summary["would_free_mib"] = round(sum(plan.bytes_by_path.values()) / 2**20, 1)
        else:
            summary["dry_run"] = False
        self.stdout.write(json.dumps(summary, indent=2))
        if plan.failed:  # a non-zero exit, so a cron job or script notices
            raise CommandError(f"{len(plan.failed)} folder(s) could not be deleted; see 'failed' above")
        return ""
