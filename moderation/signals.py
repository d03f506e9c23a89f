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

# posts_stored: new posts were stored by ingest (moderation.services.ingest). Sent with
# `post_ids` (list of int) and `batch` (bool). One post (POST /api/v1/posts): sent inside the
# transaction that inserted it, right after the insert, so a receiver may act before the commit
# makes the post visible (scoring's inline hold does). A batch request: sent once, after all of
# its chunks committed, with every new post of the request. Receivers that publish work do it
# with transaction.on_commit, and must not raise: the posts are stored whatever they do (a post
# left in `received` is found again by scoring's sweeper).
posts_stored = Signal()

# post_reported: a new report on `post` (Post) whose status a score can still change. Sent
# inside the report's transaction, after the report counters; same rules for receivers as
# posts_stored.
post_reported = Signal()

# author_changed: an author's profile changed through the API (moderation.services.authors
# author_upsert): `author` (Author) and `fields` (the profile fields that changed). Sent after
# the row is saved. The scoring path reads the profile with each post, so nothing needs it yet;
# it is the place for a receiver that keeps derived data of the author.
author_changed = Signal()
