"""Deleting many rows in bounded steps.

A single `queryset.delete()` over a year of posts would hold its locks, and Django's cascade
collector would load every related row into memory, for as long as the whole delete takes.
Here each step takes the next `batch_size` primary keys in order and deletes those rows (and
their cascades) in a transaction of its own, so locks and memory are bounded by one batch and
an interrupted run leaves only whole batches done: running it again finishes the work."""

from __future__ import annotations

from django.db import transaction
from django.db.models import QuerySet


def delete_in_batches(queryset: QuerySet, *, batch_size: int, max_batches: int | None = None) -> int:
    """Delete the rows of `queryset` `batch_size` at a time; stop after `max_batches` (None: when
    none is left). Returns how many rows of the queryset's model were deleted."""
    model = queryset.model
    label = model._meta.label
    deleted = batches = 0
    while max_batches is None or batches < max_batches:
        ids = list(queryset.order_by("pk").values_list("pk", flat=True)[:batch_size])
        if not ids:
            break
        with transaction.atomic():
            _, per_model = model._default_manager.filter(pk__in=ids).delete()
        deleted += per_model.get(label, 0)
        batches += 1
    return deleted
