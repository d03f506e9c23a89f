"""Bulk decisions over a selection or a cluster (all pending posts by an author, with a
domain, from an IP, or of a campaign of near-copies), with a preview count and an undo window.
Deciding a campaign also records the decision on the campaign, so its later members follow it
(scoring.services.campaigns); undoing the bulk action clears it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from core.errors import ApplicationError, Conflict
from moderation.models import PENDING_STATUSES, BulkAction, Decision, Post
from moderation.services.audit import audit_record
from moderation.services.campaigns import campaign_decided_clear, campaign_decided_set
from moderation.services.decisions import (
    LABEL_TO_STATUS,
    appeal_since,
    decision_record,
    key_reason,
    latest_live_decision,
    post_set_status,
    reason_code_validate,
    undo_window,
)
from moderation.services.priority import posts_report_weight_refresh, reporter_records_relabel
from moderation.services.statements import statements_reverse
from moderation.signals import decisions_undone

CLUSTER_KINDS = ("author", "domain", "ip", "campaign")


def bulk_max_posts() -> int:
    return int(getattr(settings, "DASHBOARD_BULK_MAX", 1000))


@dataclass(frozen=True)
class Cluster:
    kind: str  # author | domain | ip | campaign
    value: int  # the Author / Domain / IpAddress / Campaign id

    def as_scope(self) -> dict[str, Any]:
        return {"cluster": self.kind, "id": self.value}


def cluster_queryset(*, cluster: Cluster) -> QuerySet[Post]:
    qs = Post.objects.filter(status__in=PENDING_STATUSES)
    if cluster.kind == "author":
        return qs.filter(author_id=cluster.value)
    if cluster.kind == "domain":
        return qs.filter(link__domain_id=cluster.value)
    if cluster.kind == "ip":
        return qs.filter(ip_id=cluster.value)
    if cluster.kind == "campaign":
        return qs.filter(campaign_id=cluster.value)
    raise ApplicationError("Unknown cluster.", code="invalid_cluster")


def cluster_preview_count(*, cluster: Cluster) -> int:
    return cluster_queryset(cluster=cluster).count()


@transaction.atomic
def bulk_decide(
    *,
    moderator: Any,
    label: str,
    reason_code: str = "",
    note: str = "",
    post_ids: list[int] | None = None,
    cluster: Cluster | None = None,
) -> BulkAction:
    """Decide every selected post with one label. Exactly one of post_ids / cluster. The
    selection is explicit, so already-decided posts in it are decided again (override); an
    empty reason becomes the label's key reason."""
    if (post_ids is None) == (cluster is None):
        raise ApplicationError("Select posts or a cluster.", code="invalid_selection")
    reason_code = reason_code or key_reason(label=label)
    category = reason_code_validate(label=label, reason_code=reason_code)
    if cluster is not None:
        qs = cluster_queryset(cluster=cluster)
        scope = cluster.as_scope()
    else:
        ids = sorted({int(i) for i in post_ids or []})
        qs = Post.objects.filter(pk__in=ids)
        scope = {"ids": ids}
    limit = bulk_max_posts()
    posts = list(qs.order_by("pk").select_for_update(of=("self",))[: limit + 1])
    if not posts:
        raise ApplicationError("Nothing to act on: the selection is empty.", code="empty_selection")
    if len(posts) > limit:
        raise ApplicationError(f"At most {limit} posts per bulk action.", code="too_many")
    target = LABEL_TO_STATUS[label]
    bulk = BulkAction.objects.create(moderator=moderator, label=label, scope=scope)
    previous: dict[str, str] = {}
    for post in posts:
        previous[str(post.pk)] = post.status
        decision_record(
            post=post,
            moderator=moderator,
            label=label,
            reason_code=reason_code,
            note=note,
            bulk_action=bulk,
            validate_reason=False,
            override=True,
            category=category,
        )
    bulk.previous_statuses = previous
    bulk.save(update_fields=["previous_statuses"])
    if cluster is not None and cluster.kind == "campaign":
        campaign_decided_set(campaign_id=cluster.value, bulk=bulk)
    audit_record(
        actor=moderator,
        action="bulk.decide",
        target=bulk,
        before={"statuses": previous},
        after={"status": target, "label": label, "reason_code": reason_code, "count": len(previous), **scope},
    )
    return bulk


def bulk_can_undo(*, bulk: BulkAction, user: Any) -> bool:
    from moderation.permissions import can_administer

    if bulk.undone_at is not None or timezone.now() - bulk.created_at > undo_window():
        return False
    return bulk.moderator_id == getattr(user, "pk", None) or can_administer(user)


@transaction.atomic
def bulk_undo(*, bulk: BulkAction, moderator: Any) -> BulkAction:
    """Restore the statuses the bulk action changed, unless a later decision superseded them."""
    bulk = BulkAction.objects.select_for_update().get(pk=bulk.pk)
    if bulk.undone_at is not None:
        raise Conflict("This bulk action was already undone.", code="already_undone")
    if not bulk_can_undo(bulk=bulk, user=moderator):
        raise Conflict("The undo window has passed.", code="undo_expired")
    target = LABEL_TO_STATUS[bulk.label]
    now = timezone.now()
    decisions = list(Decision.objects.filter(bulk_action=bulk, undone_at__isnull=True))
    posts = (
        Post.objects.select_for_update(of=("self",))
        .select_related("source")
        .in_bulk([int(i) for i in bulk.previous_statuses])
    )
    restored: dict[str, str] = {}
    skipped: list[str] = []
    for post_id, old_status in bulk.previous_statuses.items():
        post = posts.get(int(post_id))
        if post is None:
            continue
        latest = Decision.objects.filter(post=post, undone_at__isnull=True).order_by("-created_at", "-pk").first()
        if post.status != target or (latest is not None and latest.bulk_action_id != bulk.pk):
            skipped.append(post_id)  # decided again since: the later decision wins
            continue
        if appeal_since(post_id=post.pk, since=bulk.created_at) is not None:
            skipped.append(post_id)  # appealed since: the appeal's outcome stands
            continue
        post_set_status(post=post, status=old_status, check=False)
        restored[post_id] = old_status
    undone = [d for d in decisions if str(d.post_id) in restored]
    Decision.objects.filter(pk__in=[d.pk for d in undone]).update(undone_at=now)
    for d in undone:
        d.undone_at = now
        after = latest_live_decision(post=posts[d.post_id])
        reporter_records_relabel(post=posts[d.post_id], old_label=d.label, new_label=after.label if after else None)
    posts_report_weight_refresh(post_ids=[int(i) for i in restored])
    statements_reverse(decisions=undone)
    bulk.undone_at = now
    bulk.save(update_fields=["undone_at"])
    campaign_decided_clear(bulk=bulk)
    audit_record(
        actor=moderator,
        action="bulk.undo",
        target=bulk,
        before={"status": target, "count": len(bulk.previous_statuses)},
        after={"statuses": restored, "skipped": skipped},
    )
    decisions_undone.send(
        sender=BulkAction, decisions=undone, bulk_action=bulk, posts=[posts[int(i)] for i in restored]
    )
    return bulk
