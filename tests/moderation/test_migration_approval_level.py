"""Earned approval's migration: a source that exists when it runs keeps the policy's full approve
band (level 1); a source created afterwards starts at 0."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from moderation.models import Source
from tests.migration_support import migrate_to, schema_at

BEFORE = [("moderation", "0033_post_spot_check_idx")]


@pytest.fixture
def old_schema(transactional_db: None) -> Iterator[Any]:
    yield from schema_at(BEFORE)


def test_existing_sources_keep_their_band_and_new_ones_start_narrow(old_schema: Any) -> None:
    old_schema.get_model("moderation", "Source").objects.create(name="Existing", slug="existing")
    migrate_to()
    assert Source.objects.get(slug="existing").approval_level == 1.0
    assert Source.objects.create(name="New", slug="new").approval_level == 0.0
