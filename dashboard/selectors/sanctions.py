"""What the author and post pages show of proportionate actions: the strike ledger per
category, the restrictions in place or lifted, the statements of reasons and the source's
ladder. A fixed number of queries per page."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.db.models import Q
from django.utils import timezone

from moderation.models import Author, LadderRule, Post, Restriction, RestrictionKind, StatementOfReasons, Strike

LIMIT = 100


@dataclass
class Sanctions:
    strikes: list[Strike]
    live_by_category: dict[str, int]
    restrictions: list[Restriction]
    statements: list[StatementOfReasons]
    ladder: list[LadderRule] = field(default_factory=list)


def author_sanctions(*, author: Author) -> Sanctions:
    now = timezone.now()
    strikes = list(
        Strike.objects.filter(author=author).select_related("issued_by", "post").order_by("-created_at")[:LIMIT]
    )
    live = Counter(s.category_label for s in strikes if s.revoked_at is None and s.expires_at > now)
    restrictions = list(
        Restriction.objects.filter(author=author).select_related("post", "imposed_by").order_by("-created_at")[:LIMIT]
    )
    statements = list(StatementOfReasons.objects.filter(author=author).order_by("-created_at")[:LIMIT])
    ladder = list(LadderRule.objects.filter(source_id=author.source_id, is_active=True).order_by("category", "strikes"))
    return Sanctions(strikes, dict(live), restrictions, statements, ladder)


def post_hidden(*, post: Post) -> Restriction | None:
    """The post's hiding pending review, while it is in place."""
    now = timezone.now()
    rows = Restriction.objects.filter(post=post, kind=RestrictionKind.HIDE, lifted_at__isnull=True)
    return rows.filter(Q(ends_at__isnull=True) | Q(ends_at__gt=now)).order_by("-created_at").first()
