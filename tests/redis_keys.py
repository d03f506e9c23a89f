"""Clearing this run's Redis state without FLUSHDB: Django's cache.clear() and a broker FLUSHDB
wipe the whole database, including whatever another run or a local stack keeps there. These
delete only the keys this project writes: the cache's KEY_PREFIX, and Celery's queues."""

from __future__ import annotations

from collections.abc import Iterable

import redis
from django.conf import settings

# kombu's Redis transport: one set per exchange naming its queues, and the unacked bookkeeping.
KOMBU_BINDINGS = "_kombu.binding.*"
KOMBU_UNACKED = ("unacked", "unacked_index", "unacked_mutex")
# kombu's separator in binding members ("routing_key<sep>pattern<sep>queue") and in the names
# of priority sub-queues ("queue<sep>3").
KOMBU_SEP = "\x06\x16"


def _glob_escape(text: str) -> str:
    return "".join(f"\\{ch}" if ch in "*?[]\\" else ch for ch in text)


def _delete(client: redis.Redis, keys: Iterable[bytes | str]) -> int:
    deleted, batch = 0, []
    for key in keys:
        batch.append(key)
        if len(batch) == 500:
            deleted += int(client.delete(*batch))
            batch = []
    if batch:
        deleted += int(client.delete(*batch))
    return deleted


def clear_cache_keys() -> int:
    """Delete every key of the configured cache (its KEY_PREFIX): claims, markers, counters."""
    config = settings.CACHES["default"]
    client = redis.Redis.from_url(config["LOCATION"])
    prefix = config.get("KEY_PREFIX", "")
    return _delete(client, client.scan_iter(match=f"{_glob_escape(prefix)}:*", count=1000))


def clear_broker_queues() -> int:
    """Delete Celery's queues on the configured broker (their messages, bindings and unacked
    records); any other key in that database is left alone."""
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    bindings = list(client.scan_iter(match=KOMBU_BINDINGS, count=1000))
    queues: set[bytes] = set()
    for binding in bindings:
        for member in client.smembers(binding):
            assert isinstance(member, bytes)  # no decode_responses: redis-py's bytes | str is bytes here
            queues.add(member.split(KOMBU_SEP.encode())[-1])
    keys: list[bytes | str] = [*bindings, *KOMBU_UNACKED]
    for queue in queues:
        keys.append(queue)
        keys.extend(client.scan_iter(match=_glob_escape(queue.decode()) + _glob_escape(KOMBU_SEP) + "*", count=1000))
    return _delete(client, keys)


def clear_redis() -> None:
    clear_cache_keys()
    clear_broker_queues()
