"""The author page: everything about one author in a bounded number of queries (posts,
decisions, reports, enforcement history, accounts linked by a shared IP or email domain)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from core.errors import NotFound
from moderation.models import AuditLog, Author, Decision, Post, Report
from scoring.features.email import is_free_provider

AUTHOR_PAGE_LIMIT = 100
LINKED_LIMIT = 20


@dataclass
class AuthorPage:
    author: Author
    posts: list[Post]
    decisions: list[Decision]
    reports: list[Report]
    enforcement: list[AuditLog]
    linked_by_ip: list[Author]
    linked_by_email_domain: list[Author]
    # A free mail domain (gmail.com) says nothing about who is behind an account.
    email_domain_is_free_mail: bool = False


def author_page(*, author_id: int) -> AuthorPage:
    author = Author.objects.select_related("source").filter(pk=author_id).first()
    if author is None:
        raise NotFound("No such author.")
    posts = list(
        Post.objects.filter(author=author)
        .select_related("link__domain", "ip")
        .order_by("-received_at")[:AUTHOR_PAGE_LIMIT]
    )
    decisions = list(
        Decision.objects.filter(post__author=author)
        .select_related("moderator", "post")
        .order_by("-created_at")[:AUTHOR_PAGE_LIMIT]
    )
    reports = list(
        Report.objects.filter(post__author=author).select_related("post").order_by("-created_at")[:AUTHOR_PAGE_LIMIT]
    )
    enforcement = list(
        AuditLog.objects.filter(target_type="author", target_id=str(author.pk))
        .select_related("actor")
        .order_by("-created_at")[:AUTHOR_PAGE_LIMIT]
    )
    # Linked accounts are the same source's: an author is a per-platform identity.
    ip_ids = Post.objects.filter(author=author, ip__isnull=False).values("ip_id")
    by_ip = list(
        Author.objects.filter(source_id=author.source_id, posts__ip_id__in=ip_ids)
        .exclude(pk=author.pk)
        .distinct()
        .order_by("-post_count", "pk")[:LINKED_LIMIT]
    )
    by_email: list[Author] = []
    free_mail = bool(author.email_domain) and is_free_provider(author.email_domain)
    if author.email_domain and not free_mail:
        by_email = list(
            Author.objects.filter(Q(source_id=author.source_id) & Q(email_domain=author.email_domain))
            .exclude(pk=author.pk)
            .order_by("-post_count", "pk")[:LINKED_LIMIT]
        )
    return AuthorPage(author, posts, decisions, reports, enforcement, by_ip, by_email, free_mail)
