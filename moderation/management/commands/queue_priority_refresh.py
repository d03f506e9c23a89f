"""Recompute the report weight and queue priority of every pending post: run after changing
DASHBOARD_SLA_SECONDS or the report severities (moderation.services.priority)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from moderation.services.priority import pending_priority_refresh_all


class Command(BaseCommand):
    help = "Recompute the queue priority of every pending post (after an SLA or weight change)."

    def handle(self, *args: Any, **options: Any) -> None:
        n = pending_priority_refresh_all()
        self.stdout.write(f"{n} pending posts re-prioritised.")
