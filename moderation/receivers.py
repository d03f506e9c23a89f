"""Signal receivers of the moderation app, connected in ModerationConfig.ready."""

from __future__ import annotations

from typing import Any

from django.db.backends.signals import connection_created
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from moderation.models import ApiKey, Source
from moderation.selectors.api_keys import api_key_cache_forget


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
