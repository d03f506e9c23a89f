"""Create (or reuse) a source and print a fresh API key for it on stdout, alone on one line,
so scripts can capture it: KEY=$(python manage.py create_source "Demo" demo)."""

from __future__ import annotations

import secrets
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from core.errors import ApplicationError
from moderation.models import ALL_SCOPES, Source
from moderation.services.api_keys import api_key_create


class Command(BaseCommand):
    help = "Create a source (or reuse the one with this slug) and print a new API key for it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("slug")
        parser.add_argument("--key-name", default="default", help="Label of the new key.")
        parser.add_argument("--callback-url", default="", help="Webhook URL for decisions.")
        parser.add_argument(
            "--scopes",
            default=",".join(ALL_SCOPES),
            help=f"Comma-separated scopes of the new key (default: all of {', '.join(ALL_SCOPES)}).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        name, slug = options["name"], options["slug"]
        with transaction.atomic():
            source = Source.objects.filter(slug=slug).first()
            if source is None:
                if Source.objects.filter(name=name).exists():
                    raise CommandError(f"a source named {name!r} exists with another slug")
                source = Source(name=name, slug=slug, callback_url=options["callback_url"])
                if source.callback_url:
                    # Events are signed with it; shown once here, kept in the source row.
                    source.webhook_secret = secrets.token_urlsafe(32)
                    self.stderr.write(f"webhook secret: {source.webhook_secret}")
                try:
                    source.full_clean()
                except ValidationError as exc:
                    raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from exc
                source.save()
                self.stderr.write(f"created source {slug}")
            else:
                self.stderr.write(f"source {slug} exists; adding a key")
            scopes = [scope.strip() for scope in options["scopes"].split(",") if scope.strip()]
            try:
                api_key, raw_key = api_key_create(source=source, name=options["key_name"], scopes=scopes)
            except ApplicationError as exc:
                raise CommandError(exc.message) from exc
            self.stderr.write(f"key scopes: {', '.join(api_key.scopes)}")
        self.stdout.write(raw_key)
