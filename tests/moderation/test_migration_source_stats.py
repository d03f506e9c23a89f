"""The data migration that fills the per-source link, domain and IP counters from the posts
already stored: each source gets its own counts, spam decisions and reporters (once per post)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from tests.migration_support import migrate_to, schema_at

BEFORE = [("moderation", "0021_author_erasure")]
AFTER = [("moderation", "0022_source_scoped_stats")]


@pytest.fixture
def old_schema(transactional_db: None) -> Iterator[Any]:
    yield from schema_at(BEFORE)


def test_each_source_gets_its_own_counts_of_the_stored_posts(old_schema: Any) -> None:
    get = old_schema.get_model
    a, b = (get("moderation", "Source").objects.create(name=n, slug=n) for n in ("a", "b"))
    domain = get("moderation", "Domain").objects.create(name="shared.example", post_count=3, report_count=3)
    link = get("moderation", "Link").objects.create(url="https://shared.example/", url_hash="c" * 64, domain=domain)
    ip = get("moderation", "IpAddress").objects.create(address="198.51.100.5", post_count=3)
    early = timezone.now() - timedelta(days=3)
    posts = []
    for n, (source, status, at) in enumerate(
        [(a, "auto_removed", early), (a, "approved", timezone.now()), (b, "queued", timezone.now())]
    ):
        author = get("moderation", "Author").objects.create(source=source, external_id=f"u{n}")
        posts.append(
            get("moderation", "Post").objects.create(
                source=source,
                external_id=f"p{n}",
                author=author,
                link=link,
                ip=ip,
                status=status,
                created_at=at,
                received_at=at,
            )
        )
    Report = get("moderation", "Report")
    for reporter, reason in [("r1", "spam"), ("r1", "abuse"), ("r2", "spam")]:  # r1 counts once
        Report.objects.create(post=posts[0], reporter_id=reporter, reason=reason)

    # The models as of that migration: later migrations add columns the current models read.
    after = migrate_to(AFTER)
    SourceDomainStats, SourceIpStats, SourceLinkStats = (
        after.get_model("moderation", name) for name in ("SourceDomainStats", "SourceIpStats", "SourceLinkStats")
    )

    def counts(model: Any, *fields: str) -> dict[str, tuple[Any, ...]]:
        return {row.source.slug: tuple(getattr(row, f) for f in fields) for row in model.objects.all()}

    assert counts(SourceDomainStats, "post_count", "spam_count", "report_count") == {"a": (2, 1, 2), "b": (1, 0, 0)}
    assert counts(SourceIpStats, "post_count", "spam_count") == {"a": (2, 1), "b": (1, 0)}
    assert counts(SourceLinkStats, "post_count") == {"a": (2,), "b": (1,)}
    assert SourceDomainStats.objects.get(source__slug="a").first_seen_at == early
