"""A source's own block list, as the API shows it: only that source's blocks, never the global
list or another source's (moderation.services.blocklists explains the two scopes)."""

from __future__ import annotations

from django.db.models import QuerySet

from moderation.models import BlockKind, Source, SourceBlock


def source_blocks(*, source: Source, kind: BlockKind) -> QuerySet[SourceBlock]:
    return SourceBlock.objects.filter(source=source, kind=kind)
