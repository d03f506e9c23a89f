"""Counter writers lock rows in one global order (ascending primary key): an ingest upsert and
a scoring counter update over the same authors wait for each other instead of deadlocking.
Two real PostgreSQL connections (one per thread); lock_timeout bounds every wait."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from django.db import connection, connections, transaction
from django.db.models import Model

from core.counters import CounterAdd, Upsert, counters_add, counters_add_together, upsert_counting, upserts_counting
from moderation.models import Author, Domain
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


def _locked_by_another(model: type[Model], pk: int) -> bool:
    """Whether another transaction holds a row lock on the row (tried from this connection)."""
    from django.db import OperationalError

    try:
        with transaction.atomic():
            list(model._default_manager.filter(pk=pk).select_for_update(nowait=True, no_key=True))
    except OperationalError:
        return True
    return False


@pytest.mark.parametrize("writer", ["counters_add_together", "upserts_counting"])
def test_one_statement_for_several_tables_writes_them_in_the_order_given(writer: str):
    """The first table's rows are written (and locked) before the statement waits for a row of
    the second: the order every counter writer uses, although it is one statement."""
    source = SourceFactory()
    authors = [Author.objects.create(source=source, external_id=e) for e in ("a", "b")]
    domain = Domain.objects.create(name="held.example")
    errors: list[BaseException] = []
    writer_pid: list[int] = []
    holder_has_domain, writer_waiting = threading.Event(), threading.Event()

    def holder() -> None:
        with transaction.atomic():
            counters_add(model=Domain, increments={domain.pk: 1}, counter="spam_count")
            holder_has_domain.set()
            assert writer_waiting.wait(BOUND_S)

    def write() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            writer_pid.append(cursor.fetchone()[0])
        assert holder_has_domain.wait(BOUND_S)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '10s'")
            if writer == "counters_add_together":
                counters_add_together(
                    [
                        CounterAdd(model=Author, increments={a.pk: 1 for a in authors}),
                        CounterAdd(model=Domain, increments={domain.pk: 1}),
                    ]
                )
            else:
                upserts_counting(
                    [
                        Upsert(
                            rows=[Author(source=source, external_id=a.external_id, post_count=1) for a in authors],
                            unique=("source", "external_id"),
                        ),
                        Upsert(rows=[Domain(name="held.example", post_count=1)], unique=["name"]),
                    ]
                )

    holder_thread = _run(holder, errors)
    writer_thread = _run(write, errors)
    deadline = time.monotonic() + BOUND_S
    while not (writer_pid and _waiting_on_lock(writer_pid[0])):
        assert writer_thread.is_alive(), errors
        assert time.monotonic() < deadline, "the writer never waited for the domain"
        time.sleep(0.02)
    # Waiting on the domain, the writer holds both authors already: their upsert came first.
    assert [_locked_by_another(Author, a.pk) for a in authors] == [True, True]
    writer_waiting.set()
    holder_thread.join(BOUND_S)
    writer_thread.join(BOUND_S)
    assert not holder_thread.is_alive() and not writer_thread.is_alive()
    assert errors == []
    assert sorted(Author.objects.filter(source=source).values_list("post_count", flat=True)) == [1, 1]
    domain.refresh_from_db()
    assert (domain.post_count, domain.spam_count) == (1, 1)
