"""An author's strikes and restrictions as their source reads them over the API."""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import NotFound
from moderation.models import Author, Restriction, Source, Strike

LIMIT = 200


@dataclass(frozen=True, slots=True)
class AuthorSanctions:
    author: Author
    strikes: list[Strike]
    restrictions: list[Restriction]


def author_sanctions_for_source(*, source: Source, external_id: str) -> AuthorSanctions:
    author = Author.objects.filter(source=source, external_id=external_id).first()
    if author is None:
        raise NotFound("No author with this external_id.", code="author_not_found")
    strikes = list(Strike.objects.filter(author=author).select_related("post").order_by("-created_at")[:LIMIT])
    restrictions = list(
        Restriction.objects.filter(author=author).select_related("post").order_by("-created_at")[:LIMIT]
    )
    return AuthorSanctions(author=author, strikes=strikes, restrictions=restrictions)
