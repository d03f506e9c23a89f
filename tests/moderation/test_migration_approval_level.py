"""Earned approval's migration: a source that exists when it runs keeps the policy's full approve
band (level 1); a source created afterwards starts at 0."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from moderation.models import Source

BEFORE = [("moderation", "0033_post_spot_check_idx")]


@pytest.fixture
def old_schema(transactional_db: None) -> Iterator[Any]:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    yield executor.loader.project_state(BEFORE).apps
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_existing_sources_keep_their_band_and_new_ones_start_narrow(old_schema: Any) -> None:
    old_schema.get_model("moderation", "Source").objects.create(name="Existing", slug="existing")
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert Source.objects.get(slug="existing").approval_level == 1.0
    assert Source.objects.create(name="New", slug="new").approval_level == 0.0
