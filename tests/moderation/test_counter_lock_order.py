"""Counter writers lock rows in one global order (ascending primary key): an ingest upsert and
a scoring counter update over the same authors wait for each other instead of deadlocking.
Two real PostgreSQL connections (one per thread); lock_timeout bounds every wait."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from django.db import connection, connections, transaction

from core.counters import counters_add, upsert_counting
from moderation.models import Author
from tests.factories import SourceFactory

pytestmark = pytest.mark.django_db(transaction=True)

BOUND_S = 20.0


def _waiting_on_lock(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return row is not None and row[0] == "Lock"


def _run(target: Callable[[], None], errors: list[BaseException]) -> threading.Thread:
    def body() -> None:
        try:
            target()
        except BaseException as exc:  # reported to the main thread
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread


def test_ingest_upsert_and_scoring_update_in_opposite_orders_do_not_deadlock():
    source = SourceFactory()
    # Ids in the opposite order of the unique key: "b" (lower id) was created before "a".
    low = Author.objects.create(source=source, external_id="b")
    high = Author.objects.create(source=source, external_id="a")
    assert low.pk < high.pk
    errors: list[BaseException] = []
    scoring_holds_low = threading.Event()
    ingest_waiting = threading.Event()
    ingest_pid: list[int] = []

    def scoring() -> None:
        # A scoring transaction midway through its counter updates: it holds the lower id and
        # goes on to the higher one (what its one multi-row UPDATE does, split so the other
        # transaction can be put in between deterministically).
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '10s'")
            counters_add(model=Author, increments={low.pk: 1}, counter="spam_count")
            scoring_holds_low.set()
            assert ingest_waiting.wait(BOUND_S)
            counters_add(model=Author, increments={high.pk: 1}, counter="spam_count")

    def ingest() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            ingest_pid.append(cursor.fetchone()[0])
        assert scoring_holds_low.wait(BOUND_S)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '10s'")
            # Sorted on the unique key, as ingest writes them: "a" (the higher id) first.
            rows = [Author(source=source, external_id=e, post_count=1) for e in ("a", "b")]
            upsert_counting(rows=rows, unique=("source", "external_id"))

    scoring_thread = _run(scoring, errors)
    ingest_thread = _run(ingest, errors)
    deadline = time.monotonic() + BOUND_S
    while not (ingest_pid and _waiting_on_lock(ingest_pid[0])):
        assert ingest_thread.is_alive(), errors
        assert time.monotonic() < deadline, "ingest never waited for the scoring transaction"
        time.sleep(0.02)
    ingest_waiting.set()
    scoring_thread.join(BOUND_S)
    ingest_thread.join(BOUND_S)
    assert not scoring_thread.is_alive() and not ingest_thread.is_alive()
    assert errors == []
    low.refresh_from_db()
    high.refresh_from_db()
    assert (low.post_count, low.spam_count, high.post_count, high.spam_count) == (1, 1, 1, 1)
