"""Create the demo admin user and the demo source for a local run. Idempotent.

The admin's password and the source's API key are printed only when they are created (the
database keeps hashes only). `--new-key` revokes the demo source's keys and issues a new one.

Usage: python scripts/seed_demo.py [--new-key]"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

DEMO_ADMIN = "admin"
DEMO_SOURCE_SLUG = "demo"
SMOKE_SOURCE_SLUG = "run-smoke-check"


def issue_key(source: object) -> str:
    """A new API key for `source` through the API-key service; only its hash is stored."""
    from moderation.models import ALL_SCOPES, Source
    from moderation.services.api_keys import api_key_create

    assert isinstance(source, Source)
    _, raw = api_key_create(source=source, name="demo key", scopes=ALL_SCOPES)
    return raw


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--new-key", action="store_true", help="revoke the demo keys and issue a new one")
    parser.add_argument(
        "--smoke-key", action="store_true", help="only print SMOKE_KEY=<key> of a separate smoke-check source"
    )
    args = parser.parse_args()

    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.utils import timezone

    from moderation.models import ApiKey, Source

    if args.smoke_key:
        with transaction.atomic():
            source, _ = Source.objects.get_or_create(slug=SMOKE_SOURCE_SLUG, defaults={"name": "run_local smoke check"})
            ApiKey.objects.filter(source=source, revoked_at__isnull=True).update(revoked_at=timezone.now())
            print(f"SMOKE_KEY={issue_key(source)}")
        return 0

    user_model = get_user_model()
    with transaction.atomic():
        if not user_model.objects.filter(username=DEMO_ADMIN).exists():
            password = secrets.token_urlsafe(12)
            user_model.objects.create_superuser(username=DEMO_ADMIN, email="admin@example.com", password=password)
            print(f"[seed] demo admin created: username {DEMO_ADMIN!r} password {password!r} (shown once)")
        else:
            print(f"[seed] demo admin {DEMO_ADMIN!r} exists (reset: python manage.py changepassword {DEMO_ADMIN})")

        source, _ = Source.objects.get_or_create(slug=DEMO_SOURCE_SLUG, defaults={"name": "Demo platform"})
        active = ApiKey.objects.filter(source=source, revoked_at__isnull=True)
        if args.new_key:
            active.update(revoked_at=timezone.now())
        if args.new_key or not active.exists():
            raw = issue_key(source)
            print(f"[seed] demo source {source.slug!r} API key (shown once, only its hash is stored): {raw}")
            print(f"[seed] try: curl -H 'Authorization: Api-Key {raw}' http://127.0.0.1:8000/api/v1/...")
        else:
            print(
                f"[seed] demo source {source.slug!r} has an API key already "
                "(new one: .venv/bin/python scripts/seed_demo.py --new-key)"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
