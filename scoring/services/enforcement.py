"""What a moderator's enforcement does to the policy's action, on rows the scoring load
already joined (author, source, domain, IP): no query per post.

- A suspended author's post is never approved automatically: it is queued, or removed when the
  source (or the SUSPENDED_AUTHOR_POSTS setting) says so.
- A trusted author or domain (allow-listed) is never removed by the models: a removal becomes
  a queued post, so a strong signal still reaches a human. A block-list short-circuit still
  removes: an explicit block outranks trust.
Suspension wins over trust."""

from __future__ import annotations

from datetime import datetime

from moderation.enforcement_state import author_allowlisted, author_suspended, list_status, suspended_post_action
from moderation.models import ListStatus, Post
from scoring.models import Action


def enforced_action(*, post: Post, action: Action, short_circuited: bool, now: datetime) -> tuple[Action, str]:
    """(action, why) where `why` names the enforcement that changed the policy's action ("" when
    none did)."""
    author = post.author
    if author_suspended(author, now=now):
        if suspended_post_action(post.source) == "remove":
            return Action.REMOVE, "author suspended: removed"
        if action == Action.APPROVE:
            return Action.QUEUE, "author suspended: held for review"
        return action, ""
    if action != Action.REMOVE or short_circuited:
        return action, ""
    if author_allowlisted(author, now=now):
        return Action.QUEUE, "trusted author: queued instead of removed"
    link = post.link
    if link is not None and list_status(link.domain, now=now) == ListStatus.ALLOW:
        return Action.QUEUE, f"trusted domain {link.domain.name}: queued instead of removed"
    return action, ""
