"""Raise each source's approval level as far as its reviewed posts earn (scoring.services.
approval_levels): what the beat task does every EARNED_APPROVAL_INTERVAL_S, run now, with each
source's evidence printed."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand
from django.utils import timezone

from moderation.models import Source
from scoring.services.approval_levels import level_evidence, update_approval_levels
from scoring.services.policy import policy_active


class Command(BaseCommand):
    help = "Raise each source's approval level as far as its reviewed posts earn, and print the evidence."

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.EARNED_APPROVAL:
            self.stdout.write("EARNED_APPROVAL is off: every source has the policy's full approve band.")
            return
        policy, now = policy_active(), timezone.now()
        moved = update_approval_levels(policy=policy, now=now)
        for source in Source.objects.filter(is_active=True).order_by("id"):
            bands = ", ".join(
                f"{e.level:.2f}: {e.removed}/{e.labelled} removed (upper {e.upper_bound:.3f})"
                for e in level_evidence(source, policy, now=now)
            )
            raised = " (raised)" if source.id in moved else ""
            self.stdout.write(f"{source.slug}: level {source.approval_level:.2f}{raised}; bands {bands}")
