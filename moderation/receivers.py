"""Signal receivers of the moderation app, connected in ModerationConfig.ready."""

from __future__ import annotations

import logging
from typing import Any

from axes.signals import user_locked_out
from django.contrib.auth.signals import user_login_failed
from django.db.backends.signals import connection_created
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from moderation.models import ApiKey, Decision, Post, Source
from moderation.selectors.api_keys import api_key_cache_forget
from moderation.services.audit import audit_record
from moderation.services.sanctions import post_hides_end_on_decision
from moderation.signals import decision_recorded

logger = logging.getLogger(__name__)


@receiver([post_save, post_delete], sender=ApiKey, dispatch_uid="moderation.api_key_cache_forget")
def api_key_changed(sender: type[ApiKey], instance: ApiKey, **kwargs: Any) -> None:
    # Revoked, renamed or deleted: the next request re-reads the key from PostgreSQL.
    api_key_cache_forget(hashed_keys=[instance.hashed_key])


@receiver([post_save, post_delete], sender=Source, dispatch_uid="moderation.source_api_keys_cache_forget")
def source_changed(sender: type[Source], instance: Source, created: bool = False, **kwargs: Any) -> None:
    # A disabled source must stop authenticating at once; cached keys carry the source row.
    if not created:
        hashed_keys = ApiKey.objects.filter(source_id=instance.pk).values_list("hashed_key", flat=True)
        api_key_cache_forget(hashed_keys=list(hashed_keys))


@receiver(decision_recorded, dispatch_uid="moderation.hides_end_on_decision")
def hides_end_on_decision(sender: Any, *, decision: Decision, post: Post, **kwargs: Any) -> None:
    # Inside the decision's transaction: the hiding ends with the decision or not at all.
    post_hides_end_on_decision(post=post, actor=decision.moderator)


@receiver(user_login_failed, dispatch_uid="moderation.login_failed")
def login_failed(sender: Any, credentials: dict[str, Any], request: Any = None, **kwargs: Any) -> None:
    # Django passes the credentials with the password already masked; only the username is logged.
    address = request.META.get("REMOTE_ADDR", "") if request is not None else ""
    logger.warning("accounts.login_failed username=%r ip=%s", str(credentials.get("username", ""))[:150], address)


@receiver(user_locked_out, dispatch_uid="moderation.login_locked_out")
def login_locked_out(sender: Any, request: Any, username: str | None, ip_address: str | None, **kwargs: Any) -> None:
    """django-axes locked out a username or an address: one audit entry (actor None, the
    attempt is anonymous), so the audit page shows who was being guessed and from where."""
    logger.warning("accounts.locked_out username=%r ip=%s", username, ip_address)
    audit_record(
        actor=None,
        action="account.locked_out",
        target_type="user",
        target_id=(username or "")[:64],
        after={"username": (username or "")[:150], "ip_address": ip_address or ""},
    )


@receiver(connection_created, dispatch_uid="moderation.json_as_text")
def json_as_text(sender: Any, connection: Any, **kwargs: Any) -> None:
    """psycopg decodes `json` columns itself, while Django has it return `jsonb` as text for
    JSONField.from_db_value to decode. Give `json` (StoredJSONField) the same text loader, so
    a value is decoded once, by the field, whichever of the two types holds it."""
    if connection.vendor != "postgresql":
        return
    adapters = getattr(connection.connection, "adapters", None)  # psycopg 3; psycopg2 has none
    if adapters is not None:
        from psycopg.types.string import TextLoader

        adapters.register_loader("json", TextLoader)


@receiver(connection_created, dispatch_uid="moderation.timestamptz_iso")
def timestamptz_iso(sender: Any, connection: Any, **kwargs: Any) -> None:
    """Timestamps parsed in C rather than by Django's pure-Python loader (core.pg_loaders)."""
    if connection.vendor != "postgresql":
        return
    adapters = getattr(connection.connection, "adapters", None)  # psycopg 3; psycopg2 has none
    if adapters is not None:
        from core.pg_loaders import iso_timestamptz_loader

        adapters.register_loader("timestamptz", iso_timestamptz_loader(connection.timezone))
