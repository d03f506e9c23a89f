"""Erasure of an author's personal data on request (the platform through the API, an admin
from the dashboard or the Django admin).

What goes: the profile (username, email domain, account age, counts, the platform's external
id, replaced by `erased-<pk>`); every post's text, link, link preview, journey and IP address,
and the link, domain and IP rows no other post uses, with this source's counters of them
(posts stay as tombstones: id, external id, status, score, so the platform's references and
the decision history keep their meaning); report details, decision notes, appeal statements
and appeal resolution notes on those posts; the enforcement notes about the author; the
moderators' notes on the author and their posts, and those notes' texts in the audit trail; the
author's id in their account's statements of reasons; and, through
moderation.signals.author_erased, the labelled examples made from the posts, their rows in
dataset and suite files (the dataset's erasure record lists the model versions trained on them
for retraining), the feature values of their Score rows, the notes and the author's id in the
webhook events logged about them, and the scoring queue's Redis keys of the posts. A domain or
address under a moderator's global block or allow stays: that row is the moderators' record,
and no longer tied to the author. One audit entry records who erased whom and how many posts,
and nothing erased."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from core.errors import Conflict
from moderation.models import Appeal, AuditLog, Author, Decision, Domain, IpAddress, Link, ListStatus, Post, Report
from moderation.services.audit import audit_record
from moderation.services.notes import notes_erase_author
from moderation.services.statements import statements_erase_author
from moderation.signals import author_erased

ERASED_PREFIX = "erased-"
# Audit entries about the author whose before/after may carry a moderator's note on them.
_NOTE_KEYS = ("suspended_reason", "allowlisted_reason", "note", "reason")


@transaction.atomic
def author_erase(*, author: Author, actor: Any, via: str) -> Author:
    """Erase `author`'s personal data. `via`: "api:<slug>" or "dashboard"/"admin"."""
    author = Author.objects.select_for_update(of=("self",)).select_related("source").get(pk=author.pk)
    if author.erased_at is not None:
        raise Conflict("This author's data was already erased.", code="already_erased")
    external_id = author.external_id
    posts = Post.objects.filter(author=author)
    post_ids = list(posts.values_list("pk", flat=True))
    ip_ids = set(posts.exclude(ip__isnull=True).values_list("ip_id", flat=True))
    link_ids = set(posts.exclude(link__isnull=True).values_list("link_id", flat=True))
    domain_ids = set(Link.objects.filter(pk__in=link_ids).values_list("domain_id", flat=True))
    posts.update(
        text="",
        url="",
        link=None,
        preview_title="",
        preview_description="",
        preview_text="",
        ip=None,
        journey=[],
        content_hash="",
    )
    Report.objects.filter(post_id__in=post_ids).update(details="")
    Decision.objects.filter(post_id__in=post_ids).update(note="")
    Appeal.objects.filter(post_id__in=post_ids).update(statement="", resolution_note="")
    # An address only this author used is theirs; a blocked one stays (the block is the
    # moderators' record, and it is not tied to the author any more).
    used_elsewhere = Post.objects.filter(ip_id=OuterRef("pk"))
    IpAddress.objects.filter(pk__in=ip_ids).exclude(status=ListStatus.BLOCK).exclude(Exists(used_elsewhere)).delete()
    # A URL only this author posted may carry them (a profile link, a tracking id), and so
    # may a domain no other link names (a personal site, a name-based host).
    Link.objects.filter(pk__in=link_ids).exclude(Exists(Post.objects.filter(link_id=OuterRef("pk")))).delete()
    Domain.objects.filter(pk__in=domain_ids, status=ListStatus.UNKNOWN).exclude(
        Exists(Link.objects.filter(domain_id=OuterRef("pk")))
    ).delete()
    for entry in AuditLog.objects.filter(target_type="author", target_id=str(author.pk)):
        entry.before = {k: v for k, v in entry.before.items() if k not in _NOTE_KEYS}
        entry.after = {k: v for k, v in entry.after.items() if k not in _NOTE_KEYS}
        entry.save(update_fields=["before", "after"])
    notes_erase_author(author=author)
    author.external_id = f"{ERASED_PREFIX}{author.pk}"
    author.username = ""
    author.email_domain = ""
    author.account_created_at = None
    author.friends_count = author.followers_count = 0
    author.platform_post_count = author.platform_spam_post_count = author.platform_spam_report_count = 0
    author.verified = False
    author.suspended_reason = author.allowlisted_reason = ""
    author.erased_at = timezone.now()
    author.save()
    statements_erase_author(author=author)
    author_erased.send(sender=Author, source_slug=author.source.slug, author_external_id=external_id, post_ids=post_ids)
    audit_record(
        actor=actor,
        action="author.erase",
        target=author,
        after={"posts": len(post_ids), "via": via, "erased_at": author.erased_at.isoformat()},
    )
    return author
