"""Raise each source's approval level as far as its reviewed posts earn, or lower it where its
spot checks disprove an open step (scoring.services.approval_levels): what the beat task does
every EARNED_APPROVAL_INTERVAL_S, run now, with each source's evidence printed; --dry-run prints
what it would do and changes nothing (before switching on, or after changing a setting)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from moderation.models import Source
from scoring.services.approval_levels import level_evidence, spot_check_evidence, update_approval_levels
from scoring.services.policy import policy_active


class Command(BaseCommand):
    help = (
        "Raise each source's approval level as far as its reviewed posts earn, lower it where its spot checks "
        "disprove an open step, and print the evidence."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="print what would move; change nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.EARNED_APPROVAL:
            self.stdout.write("EARNED_APPROVAL is off: every source has the policy's full approve band.")
            return
        policy, now = policy_active(), timezone.now()
        sources = list(Source.objects.filter(is_active=True).order_by("id"))
        before = {source.id: source.approval_level for source in sources}
        # Read before the update: a lowering starts the evidence over, and the checks that caused it
        # are what the operator needs to see.
        checks = {source.id: spot_check_evidence(source, policy, now=now) for source in sources}
        dry_run = bool(options["dry_run"])
        moved = update_approval_levels(policy=policy, now=now, dry_run=dry_run)
        for source in Source.objects.filter(pk__in=before).order_by("id"):
            bands = ", ".join(
                f"{e.level:.2f}: {e.removed}/{e.labelled} removed (upper {e.upper_bound:.3f})"
                for e in level_evidence(source, policy, now=now)
            )
            drawn = ", ".join(
                f"{e.level:.2f}: {e.removed}/{e.labelled} removed (lower {e.lower_bound:.3f})"
                for e in checks[source.id]
            )
            change = ""
            if source.id in moved:
                how = "raised" if moved[source.id] > before[source.id] else "lowered: spot checks"
                change = f" (would be {how}, to {moved[source.id]:.2f})" if dry_run else f" ({how})"
            line = f"{source.slug}: level {source.approval_level:.2f}{change}; bands {bands}"
            self.stdout.write(line + (f"; spot checks of open steps {drawn}" if drawn else ""))
