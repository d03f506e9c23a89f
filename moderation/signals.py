"""Signals other apps subscribe to, so they can react without moderation importing them.

decision_recorded: sent by moderation.services.decisions.decision_record inside its
transaction, right after the Decision row and the post's new status are written.
Receivers get `decision` (Decision) and `post` (Post) as keyword arguments; a receiver that
raises rolls the decision back, so receivers that must not block a decision should catch
their own errors or defer work with transaction.on_commit.
"""

from __future__ import annotations

from django.dispatch import Signal

decision_recorded = Signal()

# decisions_undone: sent by moderation.services.bulk.bulk_undo inside its transaction with
# `decisions` (list of Decision, now carrying undone_at), `bulk_action` and `posts` (the posts
# whose status was restored, source loaded), so derived data can be withdrawn and the platform
# told.
decisions_undone = Signal()

# platform_event: something the platform should hear about that is not a post's decision: an
# enforcement (author suspended or trusted, a domain or IP blocked or trusted, or lifted) or an
# appeal's outcome. Sent inside the change's transaction with `sources` (the Sources to tell),
# `event_type`, `key` (unique per occurrence, e.g. the audit entry's id: a repeat is one event)
# and `data` (the JSON body's data); `post` when the event concerns one post.
platform_event = Signal()

# author_erased: sent by moderation.services.erasure.author_erase inside its transaction with
# `source_slug`, `author_external_id` (as it was before erasure) and `post_ids`, so derived copies
# of the author's data (labelled examples, dataset files) are removed too.
author_erased = Signal()
