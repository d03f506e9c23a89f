"""Give a user a dashboard role: `manage.py grant_role alice moderator [--create]`.

Admins also get is_staff, so the Django admin pages the dashboard links to (thresholds, API
keys, reason codes, users) open for them; their group carries the model permissions."""

from __future__ import annotations

import argparse
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError

from moderation.permissions import Role


class Command(BaseCommand):
    help = "Add a user to the moderator, admin or analyst group."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("username")
        parser.add_argument("role", choices=[r.value for r in Role])
        parser.add_argument("--create", action="store_true", help="create the user if missing")
        parser.add_argument("--password", default="", help="with --create: the initial password")
        parser.add_argument("--revoke", action="store_true", help="remove the role instead")

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        user = User.objects.filter(username=options["username"]).first()
        if user is None:
            if not options["create"]:
                raise CommandError(f"No user {options['username']!r}; pass --create to make one.")
            user = User.objects.create_user(username=options["username"], password=options["password"] or None)
        group = Group.objects.get(name=options["role"])
        if options["revoke"]:
            user.groups.remove(group)
            if options["role"] == Role.ADMIN and not user.is_superuser:
                user.is_staff = False
                user.save(update_fields=["is_staff"])
            self.stdout.write(f"{user.get_username()}: removed {group.name}")
            return
        user.groups.add(group)
        if options["role"] == Role.ADMIN and not user.is_staff:
            user.is_staff = True
            user.save(update_fields=["is_staff"])
        self.stdout.write(f"{user.get_username()}: {group.name}")
