"""Moderator decisions become labelled examples, frozen at decision time.

`label_from_decision` runs inside decision_record's transaction (via the decision_recorded
signal), so the example sees exactly the post, author and latest Score the moderator saw.
Everything is copied by value; later edits to the post, the author or new scores do not reach
the example (the rows are immutable, see feedback.models).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

from feedback.models import ExampleOrigin, LabelledExample
from feedback.permissions import can_administer_ml
from moderation.categories import category_for_label
from moderation.models import Decision, Post
from scoring.models import Score

logger = logging.getLogger(__name__)

SUB_SCORE_FIELDS = ("text_score", "preview_score", "link_score", "behaviour_score")


def _latest_score(post: Post) -> Score | None:
    return Score.objects.filter(post=post).order_by("-created_at", "-id").first()


def _sub_scores(score: Score | None) -> dict[str, float]:
    if score is None:
        return {}
    values = {name.removesuffix("_score"): getattr(score, name) for name in SUB_SCORE_FIELDS}
    return {k: float(v) for k, v in values.items() if v is not None}


@transaction.atomic
def label_from_decision(*, decision: Decision, post: Post | None = None) -> LabelledExample:
    """Freeze one decision into a LabelledExample. Idempotent: one example per decision."""
    existing = LabelledExample.objects.filter(decision_id=decision.pk).first()
    if existing is not None:
        return existing
    if post is None or post.pk != decision.post_id:
        post = Post.objects.select_related("source", "author").get(pk=decision.post_id)
    score = _latest_score(post)
    moderator: Any = decision.moderator
    return LabelledExample.objects.create(
        origin=ExampleOrigin.DECISION,
        decision_id=decision.pk,
        post_id=post.pk,
        score_id=score.pk if score else None,
        source_slug=post.source.slug,
        post_external_id=post.external_id,
        author_external_id=post.author.external_id,
        text=post.text,
        preview_text="\n".join(p for p in (post.preview_title, post.preview_description, post.preview_text) if p),
        url=post.url,
        features=dict(score.features) if score else {},
        sub_scores=_sub_scores(score),
        final_score=score.final_score if score else None,
        model_set=score.model_set if score else "",
        model_versions=dict(score.model_versions) if score else {},
        label=decision.label,
        reason_code=decision.reason_code,
        category=decision.category or category_for_label(decision.label),
        decided_by_id=decision.moderator_id,
        decided_by_username=moderator.get_username() if moderator is not None else "",
        decided_by_admin=can_administer_ml(moderator),
        decided_at=decision.created_at,
    )


def on_decision_recorded(sender: Any, *, decision: Decision, post: Post | None = None, **kwargs: Any) -> None:
    """Signal receiver. A failure here must not undo the moderator's decision: it runs in a
    savepoint and is logged; `backfill_labels` can recreate missing examples later."""
    try:
        with transaction.atomic():
            label_from_decision(decision=decision, post=post)
    except Exception:
        logger.exception("feedback.label_failed", extra={"decision_id": decision.pk})


def labels_backfill(*, limit: int | None = None) -> int:
    """Create examples for decisions that have none (signal missed, or decisions older than
    the feedback app). Features then come from the latest Score, which may be newer than the
    decision: the examples record score_id so this stays traceable."""
    missing = (
        Decision.objects.filter(labelled_example__isnull=True)
        .select_related("post__source", "post__author", "moderator")
        .order_by("id")
    )
    if limit is not None:
        missing = missing[:limit]
    created = 0
    for decision in missing:
        label_from_decision(decision=decision, post=decision.post)
        created += 1
    return created
