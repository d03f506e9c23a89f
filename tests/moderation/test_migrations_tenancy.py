"""The data migrations of the tenancy work, run on rows as an older installation has them:
blocks that sources set through the API become their own (no longer global), moderators'
blocks stay global, existing API keys keep working with every scope, and the admin role loses
group editing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.migration_support import migrate_to, schema_at

BEFORE = [("moderation", "0009_post_author_link_idx")]


@pytest.fixture
def old_schema(transactional_db: None) -> Iterator[Any]:
    """The apps as of BEFORE; the latest schema is restored afterwards."""
    yield from schema_at(BEFORE)


def test_api_set_global_blocks_become_their_sources_own(old_schema: Any) -> None:
    apps = old_schema
    Source = apps.get_model("moderation", "Source")
    Domain = apps.get_model("moderation", "Domain")
    IpAddress = apps.get_model("moderation", "IpAddress")
    ApiKey = apps.get_model("moderation", "ApiKey")
    Group = apps.get_model("auth", "Group")
    source = Source.objects.create(name="Old", slug="old")
    Domain.objects.create(name="com", status="block", status_reason="everything", status_source=source)
    Domain.objects.create(name="moderated.example", status="block", status_reason="kit")
    IpAddress.objects.create(address="203.0.113.9", status="block", status_reason="bursts", status_source=source)
    ApiKey.objects.create(source=source, name="old key", prefix="mk_00000000", hashed_key="0" * 64)
    Permission = apps.get_model("auth", "Permission")
    # A transactional test before this one flushes the rows that moderation 0002 seeded; the
    # role is then set up again as 0002 left it (group and user editing included).
    admin, created = Group.objects.get_or_create(name="admin")
    if created:
        admin.permissions.add(
            *Permission.objects.filter(
                content_type__app_label="auth",
                codename__in=["add_group", "change_group", "delete_group", "change_user"],
            )
        )
    assert admin.permissions.filter(codename="change_group").exists()

    migrate_to()

    from django.contrib.auth.models import Group as LiveGroup

    from moderation.models import ALL_SCOPES, AuditLog, ListStatus, SourceBlock
    from moderation.models import ApiKey as LiveApiKey
    from moderation.models import Domain as LiveDomain
    from moderation.models import IpAddress as LiveIp

    blocks = set(SourceBlock.objects.values_list("source__slug", "kind", "value", "reason"))
    assert blocks == {("old", "domain", "com", "everything"), ("old", "ip", "203.0.113.9", "bursts")}
    assert LiveDomain.objects.get(name="com").status == ListStatus.UNKNOWN
    assert LiveIp.objects.get(address="203.0.113.9").status == ListStatus.UNKNOWN
    assert LiveDomain.objects.get(name="moderated.example").status == ListStatus.BLOCK
    assert AuditLog.objects.filter(action__endswith=".block_scoped_to_source").count() == 2
    # Every scope there was when scopes came in; a scope added later (appeals, erasure) is
    # granted explicitly, never to old keys by default.
    old_scopes = ["posts:write", "reports:write", "authors:write", "blocks:write", "read"]
    assert LiveApiKey.objects.get(prefix="mk_00000000").scopes == old_scopes
    assert set(old_scopes) < set(ALL_SCOPES)
    live_admin = LiveGroup.objects.get(name="admin")
    assert not live_admin.permissions.filter(codename__in=["add_group", "change_group", "delete_group"]).exists()
    assert live_admin.permissions.filter(codename="change_user").exists()
