"""Data-migration tests: move the test database's schema to a point of the migration graph and
back, with the historical apps of that point (what a data migration sees)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate_to(targets: Sequence[tuple[str, str]] | None = None) -> Any:
    """Apply or unapply migrations up to `targets` (None: the latest of every app); the apps as of
    there."""
    executor = MigrationExecutor(connection)
    nodes = list(targets) if targets is not None else executor.loader.graph.leaf_nodes()
    executor.migrate(nodes)
    return executor.loader.project_state(nodes).apps


def schema_at(targets: Sequence[tuple[str, str]]) -> Iterator[Any]:
    """A fixture's body: the apps as of `targets`; the latest schema is restored afterwards."""
    yield migrate_to(targets)
    migrate_to()
