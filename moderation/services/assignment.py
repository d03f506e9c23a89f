"""Ownership of queue items: a post is assigned to a moderator, to a specialist queue (the
moderators of one policy category), or to nobody.

- `Post.assigned_to`: the moderator responsible for it. Claiming ("assign to me") takes a post
  that is unassigned, already yours, or in a specialist queue you are a member of; assigning
  it to someone names any moderator explicitly, whoever held it.
- `Post.assigned_queue`: the specialist queue it waits in. A post assigned to a person keeps
  its queue (the queue's view still lists what its specialists are working on); handing a
  post to a queue clears the person; unassigning clears both.
- Routing: when scoring queues a post nobody owns, and the post's top category has a
  specialist queue with `auto_route`, the post lands in that queue (posts_route_to_specialists).
- A decision on the post ends its assignment (moderation.services.decisions).
- Focus mode and the next post after a decision serve only what `servable_q` allows: never a
  colleague's post, nor one waiting for specialists the moderator is not one of.

Not the claim of moderation.services.claims: that is a lock of a few minutes so that two
moderators in focus mode are not served the same post; an assignment is who owns the item
until it is decided. Every change here writes one audit entry per post."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from core.errors import ApplicationError, Conflict, Forbidden
from moderation.categories import ABUSE, SPAM, policy_categories
from moderation.models import PENDING_STATUSES, Post, PostStatus, Report, SpecialistQueue
from moderation.permissions import can_administer, can_moderate
from moderation.services.audit import audit_record

ASSIGN_FIELDS = ["assigned_to", "assigned_queue", "assigned_at"]


@dataclass(frozen=True, slots=True)
class AssignTarget:
    """Where an assignment sends posts: a moderator, a specialist queue, or nobody (both None)."""

    user: Any = None
    queue: SpecialistQueue | None = None

    def __post_init__(self) -> None:
        if self.user is not None and self.queue is not None:
            raise ValueError("a post is assigned to a moderator or handed to a queue, not both at once")


def top_category(*, abuse_score: float | None, abuse_threshold: float, report_categories: Mapping[str, int]) -> str:
    """The harm a queued post is most about: the category its reports name most (people named
    the harm; ties go to the policy list's order), else abuse when the abuse model holds it at
    the source's queue threshold, else spam (the spam model queued it)."""
    if report_categories:
        order = {code: i for i, (code, _) in enumerate(policy_categories())}
        return min(report_categories, key=lambda c: (-report_categories[c], order.get(c, len(order)), c))
    if abuse_score is not None and abuse_score >= abuse_threshold:
        return ABUSE
    return SPAM


def _who(post: Post) -> dict[str, Any]:
    return {
        "assigned_to": post.assigned_to.get_username() if post.assigned_to is not None else None,
        "assigned_queue": post.assigned_queue.name if post.assigned_queue is not None else None,
    }


def _check_target(target: AssignTarget) -> None:
    if target.user is not None and not can_moderate(target.user):
        raise ApplicationError(
            f"{target.user.get_username()} is not a moderator.",
            code="not_a_moderator",
            fields={"assignee": ["Pick a moderator."]},
        )


def _pending(posts: Sequence[Post]) -> None:
    decided = [p.pk for p in posts if p.status not in PENDING_STATUSES]
    if decided:
        ids = ", ".join(f"#{pk}" for pk in decided[:10])
        raise Conflict(f"Already decided, nothing to assign: post {ids}.", code="already_decided")


def _write(*, post: Post, actor: Any, target_user: Any, target_queue: Any, keep_queue: bool, action: str) -> bool:
    before = _who(post)
    post.assigned_to = target_user
    if not keep_queue:
        post.assigned_queue = target_queue
    post.assigned_at = timezone.now() if (post.assigned_to is not None or post.assigned_queue is not None) else None
    after = _who(post)
    if after == before:
        return False
    post.save(update_fields=ASSIGN_FIELDS)
    audit_record(actor=actor, action=action, target=post, before=before, after=after)
    return True


def _locked(post_ids: Sequence[int]) -> list[Post]:
    return list(
        Post.objects.filter(pk__in=sorted(set(post_ids)))
        .select_related("assigned_to", "assigned_queue")
        .select_for_update(of=("self",))
        .order_by("pk")
    )


@transaction.atomic
def posts_assign(*, post_ids: Sequence[int], actor: Any, target: AssignTarget) -> int:
    """Assign these pending posts to a moderator, hand them to a specialist queue, or (an empty
    target) unassign them. Explicit, so it takes posts whoever held them. Returns how many
    changed."""
    _check_target(target)
    posts = _locked(post_ids)
    if not posts:
        raise ApplicationError("Nothing to assign: the selection is empty.", code="empty_selection")
    _pending(posts)
    action = "post.assign" if target.user is not None or target.queue is not None else "post.unassign"
    changed = 0
    for post in posts:
        changed += _write(
            post=post,
            actor=actor,
            target_user=target.user,
            target_queue=target.queue,
            keep_queue=target.user is not None,
            action=action,
        )
    return changed


def claim_blocker(*, post: Post, user: Any) -> str:
    """Why `user` may not claim `post`, or "" when they may (see the module docstring)."""
    if post.status not in PENDING_STATUSES:
        return "Already decided: there is nothing to claim."
    if post.assigned_to_id is not None and post.assigned_to_id != user.pk:
        return f"Assigned to {post.assigned_to}; ask them, or assign it to yourself explicitly."
    if post.assigned_to_id is None and post.assigned_queue_id is not None and not can_administer(user):
        queue = post.assigned_queue
        if queue is not None and not queue.members.filter(pk=user.pk).exists():
            return f"Waiting in the {queue.name} queue for its specialists."
    return ""


def servable_q(*, user: Any) -> Q:
    """The posts to serve `user` next (focus mode, the next post after a decision): theirs, and
    those nobody owns outside specialist queues or in one of theirs. An admin is served any
    specialist queue's. What a colleague owns is never served; the queue still lists it."""
    free = Q(assigned_to__isnull=True)
    if not can_administer(user):
        theirs = SpecialistQueue.objects.filter(members=user).values("pk")
        free &= Q(assigned_queue__isnull=True) | Q(assigned_queue_id__in=theirs)
    return Q(assigned_to=user.pk) | free


@transaction.atomic
def post_claim(*, post: Post, user: Any) -> Post:
    """Assign the post to `user` on their own request ("claim"). Refused with Conflict when a
    colleague holds it or it waits for specialists `user` is not one of."""
    (locked,) = _locked([post.pk])
    blocker = claim_blocker(post=locked, user=user)
    if blocker:
        raise Conflict(blocker, code="not_claimable")
    _write(post=locked, actor=user, target_user=user, target_queue=None, keep_queue=True, action="post.claim")
    return locked


@transaction.atomic
def post_unclaim(*, post: Post, user: Any) -> Post:
    """Give back a post assigned to `user` (an admin may give back anyone's): it returns to its
    specialist queue, if it had one, else to the unassigned posts."""
    (locked,) = _locked([post.pk])
    if locked.assigned_to_id is None:
        return locked
    if locked.assigned_to_id != user.pk and not can_administer(user):
        raise Forbidden("Only the assignee or an admin can give it back.", code="not_assignee")
    _write(post=locked, actor=user, target_user=None, target_queue=None, keep_queue=True, action="post.unclaim")
    return locked


def assignment_end_on_decision(*, post: Post) -> list[str]:
    """Clear the assignment of a post being decided (inside the decision's transaction, on the
    locked row); the fields to save, none when it had no assignment."""
    if post.assigned_to_id is None and post.assigned_queue_id is None:
        return []
    post.assigned_to = None
    post.assigned_queue = None
    post.assigned_at = None
    return ASSIGN_FIELDS


def posts_route_to_specialists(*, post_ids: Sequence[int]) -> int:
    """Hand each of these posts that waits for review with no owner to the specialist queue of
    its top category, where one routes automatically. One query when no queue does; otherwise
    a few reads and one UPDATE per queue. A post locked by a moderator's change right now is
    left to them. Returns how many posts were routed."""
    if not post_ids:
        return 0
    routes = dict(SpecialistQueue.objects.filter(auto_route=True).values_list("category", "pk"))
    if not routes:
        return 0
    rows = list(
        Post.objects.filter(
            pk__in=list(post_ids), status=PostStatus.QUEUED, assigned_to__isnull=True, assigned_queue__isnull=True
        ).values_list("pk", "abuse_score", "report_count", "source__abuse_queue_threshold")
    )
    reported = [pk for pk, _, reports, _ in rows if reports]
    by_post: dict[int, dict[str, int]] = defaultdict(dict)
    if reported:
        counts = Report.objects.filter(post_id__in=reported).values("post_id", "category").annotate(n=Count("id"))
        for row in counts:
            by_post[row["post_id"]][row["category"] or "other"] = row["n"]
    default_threshold = float(settings.ABUSE_QUEUE_THRESHOLD)
    to_queue: dict[int, list[int]] = defaultdict(list)
    for pk, abuse_score, _, threshold in rows:
        category = top_category(
            abuse_score=abuse_score,
            abuse_threshold=threshold if threshold is not None else default_threshold,
            report_categories=by_post.get(pk, {}),
        )
        if category in routes:
            to_queue[routes[category]].append(pk)
    routed = 0
    now = timezone.now()
    names = dict(SpecialistQueue.objects.filter(pk__in=list(to_queue)).values_list("pk", "name"))
    for queue_id, ids in to_queue.items():
        # Only posts still unowned: a moderator may have taken one since the read.
        with transaction.atomic():
            unowned = list(
                Post.objects.filter(pk__in=ids, assigned_to__isnull=True, assigned_queue__isnull=True)
                .select_for_update(skip_locked=True)
                .values_list("pk", flat=True)
            )
            Post.objects.filter(pk__in=unowned).update(assigned_queue_id=queue_id, assigned_at=now)
        routed += len(unowned)
        for pk in unowned:
            audit_record(
                actor=None,
                action="post.route",
                target_type="post",
                target_id=pk,
                before={"assigned_to": None, "assigned_queue": None},
                after={"assigned_to": None, "assigned_queue": names.get(queue_id)},
            )
    return routed


def _queue_state(queue: SpecialistQueue) -> dict[str, Any]:
    return {
        "name": queue.name,
        "category": queue.category,
        "auto_route": queue.auto_route,
        "members": sorted(queue.members.values_list("username", flat=True)),
    }


def specialist_queue_saved(*, queue: SpecialistQueue, actor: Any, created: bool) -> None:
    """Audit a queue an admin created or changed (after its members were saved)."""
    audit_record(
        actor=actor,
        action="specialist_queue.create" if created else "specialist_queue.change",
        target=queue,
        after=_queue_state(queue),
    )


@transaction.atomic
def specialist_queue_deleted(*, queue: SpecialistQueue, actor: Any) -> None:
    """Delete a queue; its posts become unassigned unless a moderator holds them."""
    audit_record(actor=actor, action="specialist_queue.delete", target=queue, before=_queue_state(queue))
    queue.delete()
