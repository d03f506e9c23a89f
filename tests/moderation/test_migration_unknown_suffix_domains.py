"""The data migration that groups hosts under an unknown suffix by their last two labels: links
recorded under a per-host Domain row move to the two-label row, so a block of it covers them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.migration_support import migrate_to, schema_at

BEFORE = [("moderation", "0018_enforcement_reason_expiry_allowlist")]
AFTER = [("moderation", "0019_unknown_suffix_domains_by_last_two_labels")]


@pytest.fixture
def old_schema(transactional_db: None) -> Iterator[Any]:
    yield from schema_at(BEFORE)


def test_links_under_a_per_host_domain_move_to_the_registrable_one(old_schema: Any) -> None:
    Domain = old_schema.get_model("moderation", "Domain")
    Link = old_schema.get_model("moderation", "Link")
    per_host = Domain.objects.create(name="login.paypa1-secure.example", post_count=3)
    listed = Domain.objects.create(name="shop.example.co.uk")  # a listed suffix: never a per-host row today
    phishing = Link.objects.create(
        url="http://login.paypa1-secure.example/", url_hash="a" * 64, domain=per_host, host=per_host.name
    )
    listed_link = Link.objects.create(
        url="http://shop.example.co.uk/", url_hash="b" * 64, domain=listed, host=listed.name
    )

    migrate_to(AFTER)

    from moderation.models import Domain as LiveDomain
    from moderation.models import Link as LiveLink

    assert LiveLink.objects.get(pk=phishing.pk).domain.name == "paypa1-secure.example"
    assert LiveDomain.objects.get(pk=per_host.pk).post_count == 3  # the old row stays, with its counters
    # A listed-suffix row is re-pointed the same way (its registrable domain is example.co.uk).
    assert LiveLink.objects.get(pk=listed_link.pk).domain.name == "example.co.uk"
